ALTER TABLE [dbo].[Runs] DROP COLUMN [TraceParent];
