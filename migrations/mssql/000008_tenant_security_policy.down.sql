-- Dropped before the function it binds (000007 down) and before any table it covers.
DROP SECURITY POLICY [dbo].[TenantPolicy];
