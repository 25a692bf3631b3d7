-- Reverses 000021.
SET XACT_ABORT ON;
BEGIN TRANSACTION;
ALTER TABLE [dbo].[Runs] DROP COLUMN [Metadata], [Tags];
ALTER TABLE [dbo].[ExecutionAttempts] DROP COLUMN [ErrorDetails], [ErrorMessage], [ErrorCode];
COMMIT TRANSACTION;
