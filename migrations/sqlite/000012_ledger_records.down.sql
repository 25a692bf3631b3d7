DROP TABLE PurgeBacklog;
DROP TABLE ReleaseOwners;
ALTER TABLE DecisionRequests DROP COLUMN PriorPhase;
