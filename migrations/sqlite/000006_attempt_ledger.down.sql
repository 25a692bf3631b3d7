DROP TABLE LoadedReleases;
DROP TABLE SubAgentDelegations;
DROP TABLE DecisionRequests;
DROP TABLE CallRecords;
DROP TABLE Checkpoints;
DROP TABLE ExecutionAttempts;
