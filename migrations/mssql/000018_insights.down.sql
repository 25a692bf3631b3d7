-- Reverses 000017.
SET XACT_ABORT ON;
BEGIN TRANSACTION;
DROP INDEX [IX_Calls_Tenant_Started] ON [dbo].[CallRecords];
DROP INDEX [IX_Attempts_Tenant_State_Ended] ON [dbo].[ExecutionAttempts];
DROP INDEX [IX_Runs_Tenant_Ended] ON [dbo].[Runs];
COMMIT TRANSACTION;
