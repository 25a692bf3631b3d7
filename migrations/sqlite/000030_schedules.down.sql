DROP TABLE ScheduleStates;
DROP TABLE Schedules;
