-- Reading check: one statement; the existence check lets a down run twice.
IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.CallRecords') AND name = N'IX_Calls_Tenant_Ended')
    DROP INDEX [IX_Calls_Tenant_Ended] ON [dbo].[CallRecords];
