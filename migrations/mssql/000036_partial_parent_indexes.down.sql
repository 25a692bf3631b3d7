SET XACT_ABORT ON;
BEGIN TRAN;
DROP INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs] ([TenantId], [ParentRunId], [Subject]);
COMMIT;
