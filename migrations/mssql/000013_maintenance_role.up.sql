-- migration: breaking
-- the maintenance bypass then also needs membership of ledger_maintenance, which the login of a binary deployed before it may lack.
-- The maintenance bypass of row-level security (000007) also requires membership of the
-- ledger_maintenance database role, so a login that can set SESSION_CONTEXT (any login
-- that can connect) sees every tenant's rows only when a DBA made it a member. The service's
-- login must be a member (API key lookup, reaper, purge and the CLI run in maintenance
-- scope); reporting or support logins must not be. db_owner members and dbo (which sysadmin
-- logins map to) also pass: they can drop the policy anyway, and without them a scratch
-- database migrated and served as sa would see nothing in maintenance scope.
--
-- Why IS_MEMBER: it evaluates the session's own token and needs no permission. IS_ROLEMEMBER
-- needs VIEW DEFINITION on the role and returns NULL without it, which would deny the
-- bypass to a member that lacks the grant. IS_MEMBER returns 0 for dbo (dbo is in no
-- role), hence the USER_NAME() = N'dbo' term; it returns NULL for a role that does not
-- exist, which fails the comparison (no bypass).
--
-- The function is schema-bound to TenantPolicy (SCHEMABINDING = ON): ALTER FUNCTION fails
-- while the policy references it, so the policy is dropped and recreated around it, all in
-- one transaction (XACT_ABORT ON: any error rolls everything back, and the version is left
-- dirty, with the old policy still in force). ALTER FUNCTION and CREATE SECURITY POLICY
-- must open their batch (Msg 111), so each runs in its own EXEC. The recreated policy has
-- exactly the predicates 000008, 000010, 000011 and 000012 made (a test in internal/sqldb
-- replays the migrations and checks it), and the file refuses (THROW 50013, before any
-- change) when the policy in the database has any other number of them.
--
-- Reading check:
--   - Locks: DROP/CREATE SECURITY POLICY and ALTER FUNCTION take schema modification locks
--     on the policy, the function and every table the policy names, held to COMMIT: the
--     migration waits for running transactions on those tables and blocks new ones for
--     its few milliseconds. Run it in a deploy window (as every migration).
--   - RCSI: DDL is not versioned; nothing here reads rows.
--   - 0 rows: nothing reads rows. The role is created only when missing (a DBA may have
--     made it first, with members), so running the up again after a down keeps members.
--   - Errors: 50013 when the policy is not the one the migrations made (see above), which
--     leaves version 13 dirty with nothing changed: add the missing predicates to both
--     lists here, then `ledger migrate force 12` and `up`. 15023/15247 from CREATE ROLE
--     are caught (above); 2714 (policy exists) cannot
--     happen after the DROP; 3729 (cannot alter, schema-bound) cannot happen after the
--     DROP. Any error aborts the whole file (XACT_ABORT) and golang-migrate marks 13 dirty.
--   - Predicate cost: the bypass term adds IS_MEMBER and USER_NAME calls beside the
--     SESSION_CONTEXT read the predicate already makes; all are per-session values.
--   - Permissions: CREATE ROLE (when the role is missing), ALTER ANY SECURITY POLICY,
--     ALTER on schema dbo, and REFERENCES on the function and the tables (`ledger check
--     --for migrate` checks them).
-- The role, before the transaction. DATABASE_PRINCIPAL_ID sees a role only for its members
-- and for holders of ALTER ANY ROLE (metadata visibility), so a role a DBA created first
-- without adding this login looks missing: CREATE ROLE then fails with 15023 (exists) or
-- 15247 (no CREATE ROLE permission), and both mean "leave it be". Outside a transaction
-- the error dooms nothing. If the role truly is missing and the login may not create it
-- (15247), the function below still names it (IS_MEMBER gives NULL: no bypass for anyone)
-- and `ledger check` fails maintenance-role until a DBA creates it.
BEGIN TRY
    IF DATABASE_PRINCIPAL_ID(N'ledger_maintenance') IS NULL
        EXEC(N'CREATE ROLE [ledger_maintenance];');
END TRY
BEGIN CATCH
    IF ERROR_NUMBER() NOT IN (15023, 15247)
    BEGIN
        THROW;
    END;
END CATCH;

SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- The policy is recreated from the list below: refuse to drop one that has predicates the
-- list would not bring back (a table added to it by hand, or by a later migration applied
-- out of order). 49 = the predicates of 000008, 000010, 000011 and 000012.
IF (SELECT COUNT(*) FROM sys.security_predicates WHERE object_id = OBJECT_ID(N'dbo.TenantPolicy')) <> 49
    THROW 50013, N'dbo.TenantPolicy does not have the 49 predicates migration 13 recreates: add the others to its list first', 1;

DROP SECURITY POLICY [dbo].[TenantPolicy];

EXEC(N'ALTER FUNCTION [dbo].[fn_TenantAccess] (@TenantId nvarchar(64))
RETURNS TABLE
WITH SCHEMABINDING
AS
RETURN
    SELECT 1 AS [fn_result]
    WHERE @TenantId = CAST(SESSION_CONTEXT(N''TenantId'') AS nvarchar(64)) COLLATE Latin1_General_100_BIN2
       OR (CAST(SESSION_CONTEXT(N''LedgerMaintenance'') AS int) = 1
           AND (IS_MEMBER(N''ledger_maintenance'') = 1 OR IS_MEMBER(N''db_owner'') = 1 OR USER_NAME() = N''dbo''));');

EXEC(N'CREATE SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Tenants],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Tenants] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Tenants] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ApiKeys],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ApiKeys] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ApiKeys] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Projects],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Projects] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Projects] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Runs],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Runs] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Runs] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TaskRunLocks],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TaskRunLocks] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TaskRunLocks] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ExecutionAttempts],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ExecutionAttempts] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ExecutionAttempts] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Checkpoints],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Checkpoints] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[Checkpoints] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[CallRecords],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[CallRecords] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[CallRecords] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[DecisionRequests],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[DecisionRequests] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[DecisionRequests] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[SubAgentDelegations],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[SubAgentDelegations] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[SubAgentDelegations] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[LoadedReleases],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[LoadedReleases] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[LoadedReleases] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[IdempotencyTombstones] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog] AFTER UPDATE,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] BEFORE UPDATE,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] AFTER UPDATE,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] BEFORE DELETE
WITH (STATE = ON, SCHEMABINDING = ON);');

COMMIT TRANSACTION;
