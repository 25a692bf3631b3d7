DROP INDEX IX_Decisions_Version;
DROP INDEX IX_Calls_Version;
DROP INDEX IX_Attempts_Version;
DROP INDEX IX_Runs_Version;
DROP TABLE InsightFacts;
DROP TABLE InsightCells;
DROP TABLE FeedProjectors;
