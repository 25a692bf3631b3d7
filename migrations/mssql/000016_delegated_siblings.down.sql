DROP INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs];
