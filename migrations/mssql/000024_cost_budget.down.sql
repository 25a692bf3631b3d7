SET XACT_ABORT ON;
BEGIN TRANSACTION;

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[ProjectDailyCosts],
    DROP BLOCK PREDICATE ON [dbo].[ProjectDailyCosts] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[ProjectDailyCosts] AFTER UPDATE;');
DROP TABLE [dbo].[ProjectDailyCosts];
ALTER TABLE [dbo].[Projects] DROP CONSTRAINT [CK_Projects_DailyCostBudgetMicros];
ALTER TABLE [dbo].[Projects] DROP COLUMN [DailyCostBudgetMicros];

COMMIT TRANSACTION;
