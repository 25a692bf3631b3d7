-- Children before the table their foreign keys reference.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP TABLE [dbo].[LoadedReleases];
DROP TABLE [dbo].[SubAgentDelegations];
DROP TABLE [dbo].[DecisionRequests];
DROP TABLE [dbo].[CallRecords];
DROP TABLE [dbo].[Checkpoints];
DROP TABLE [dbo].[ExecutionAttempts];

COMMIT TRANSACTION;
