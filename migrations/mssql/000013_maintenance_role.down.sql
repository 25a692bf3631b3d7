-- Restores 000007's bypass (the session key alone), around the same drop and recreate of
-- the policy as the up (see its comments and reading check). The ledger_maintenance role
-- stays: a DBA made its members, and the up keeps an existing role, so up, down and up
-- again keeps them. Drop it by hand once nothing needs it (DROP ROLE fails with 15144
-- while it has members).
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
       OR CAST(SESSION_CONTEXT(N''LedgerMaintenance'') AS int) = 1;');

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
