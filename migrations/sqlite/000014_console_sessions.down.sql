DROP TABLE ConsoleSessions;
