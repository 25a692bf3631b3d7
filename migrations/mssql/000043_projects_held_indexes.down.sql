-- Reading check: one statement each; the existence checks let a down run twice.
IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Projects') AND name = N'IX_Projects_Budgeted')
    DROP INDEX [IX_Projects_Budgeted] ON [dbo].[Projects];
IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Projects') AND name = N'IX_Projects_Inactive')
    DROP INDEX [IX_Projects_Inactive] ON [dbo].[Projects];
