-- migration: breaking
-- row-level security; a binary before it sets no tenant in SESSION_CONTEXT, so it reads no rows and every insert fails (33504).
-- Row-level security on every table that has TenantId: a FILTER predicate hides other
-- tenants' rows from SELECT, UPDATE and DELETE; BLOCK predicates AFTER INSERT and AFTER
-- UPDATE refuse a write that would leave a row outside the session's tenant (Msg 33504).
-- This is defence in depth: every query filters on TenantId itself (DESIGN.md section 6).
-- Schema-bound (the default, spelled out): the tables' TenantId columns and the function
-- cannot change while the policy exists, so 000008 down runs before any table is dropped.
-- CREATE SECURITY POLICY is kept alone in its file, like every CREATE that must open its
-- batch.
-- Later migrations run without session context: any that read or write these tables must
-- set LedgerMaintenance first.
CREATE SECURITY POLICY [dbo].[TenantPolicy]
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
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[LoadedReleases] AFTER UPDATE
WITH (STATE = ON, SCHEMABINDING = ON);
