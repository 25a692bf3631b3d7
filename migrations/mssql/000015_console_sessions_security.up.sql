-- migration: breaking
-- row-level security on ConsoleSessions, which a binary at 14 writes without a tenant in SESSION_CONTEXT.
-- Row-level security on the console sessions, as on every tenant table (000008).
ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ConsoleSessions],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ConsoleSessions] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ConsoleSessions] AFTER UPDATE;
