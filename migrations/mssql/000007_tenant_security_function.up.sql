-- migration: additive
-- Row-level security predicate for every tenant table (the policy is in 000008).
-- A row is visible and writable when its TenantId equals the session's TenantId key, which
-- the service sets with sys.sp_set_session_context at the start of every tenant-scoped
-- transaction, on the connection that runs it. An unset key is NULL, so the comparison is
-- UNKNOWN: nothing is visible, and every insert fails with Msg 33504.
-- LedgerMaintenance is the documented bypass. Only the service's maintenance code sets it
-- (to 1): the API key lookup before the tenant is known, the reaper, purge and the CLI
-- (keys, tenants). A tenant request only ever sets TenantId and never runs on a connection
-- that carries LedgerMaintenance.
-- The comparison is pinned to BIN2 so it stays case-sensitive whatever the database's
-- default collation (a parameter and a CAST otherwise take that default, which may be
-- case-insensitive).
-- Inline and schema-bound, as a security predicate must be. CREATE FUNCTION must be the
-- first statement of its batch (Msg 111): it is alone here.
CREATE FUNCTION [dbo].[fn_TenantAccess] (@TenantId nvarchar(64))
RETURNS TABLE
WITH SCHEMABINDING
AS
RETURN
    SELECT 1 AS [fn_result]
    WHERE @TenantId = CAST(SESSION_CONTEXT(N'TenantId') AS nvarchar(64)) COLLATE Latin1_General_100_BIN2
       OR CAST(SESSION_CONTEXT(N'LedgerMaintenance') AS int) = 1;
