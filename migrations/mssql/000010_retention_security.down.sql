ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[IdempotencyTombstones],
    DROP BLOCK PREDICATE ON [dbo].[IdempotencyTombstones] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[IdempotencyTombstones] AFTER UPDATE;
