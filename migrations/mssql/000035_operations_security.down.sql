ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[Operations],
    DROP BLOCK PREDICATE ON [dbo].[Operations] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[Operations] AFTER UPDATE,
    DROP FILTER PREDICATE ON [dbo].[OperationRuns],
    DROP BLOCK PREDICATE ON [dbo].[OperationRuns] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[OperationRuns] AFTER UPDATE;
