-- migration: breaking
-- row-level security on IdempotencyTombstones, which a binary at 9 writes without a tenant or bypass in SESSION_CONTEXT.
-- Row-level security on the tombstones, as on every tenant table (000008).
ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones] AFTER UPDATE;
