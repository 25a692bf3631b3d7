ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[ConsoleSessions],
    DROP BLOCK PREDICATE ON [dbo].[ConsoleSessions] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[ConsoleSessions] AFTER UPDATE;
