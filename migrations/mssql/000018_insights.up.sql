-- migration: additive
-- Insights (DESIGN.md section 5a): the indexes the aggregate history reads seek, so each
-- insight reads the rows of its window and never a tenant's whole history. Declared
-- additions (internal/schema/declared_additions.go), with their reasons there. Creating an
-- index takes a schema-modification lock on its table while it builds: on a large ledger,
-- run this migration off-peak, or create the indexes by hand first (ONLINE, on an edition
-- that allows it) with the same names and definitions.
--
-- Reading check: each build is its own autocommit statement, so a lock on Runs is let go
-- before ExecutionAttempts is locked, and so on; none is held until the last build ends.
-- Each is guarded by an existence check on sys.indexes, so an index made by hand, or a
-- second run after a failure and `migrate force 17`, skips it instead of failing with 1913
-- and leaving version 18 dirty. A failure part way leaves the earlier indexes built and
-- version 18 dirty: `ledger migrate force 17`, then `ledger migrate up` builds the rest.

-- Runs ended in a window, by outcome, project, agent and kind (and the attempts of each
-- finished run); filtered to ended runs, the only ones with an EndedAt.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Runs') AND name = N'IX_Runs_Tenant_Ended')
    CREATE INDEX [IX_Runs_Tenant_Ended] ON [dbo].[Runs] ([TenantId], [EndedAt])
        INCLUDE ([Outcome], [ProjectId], [AgentId], [Kind])
        WHERE [State] = 2;
-- Attempts ended in a window, one range per state (lost and released apart), and the leases
-- lost in the last hour of the console's overview: a seek bounded to the window, not every
-- lost attempt the tenant still holds.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.ExecutionAttempts') AND name = N'IX_Attempts_Tenant_State_Ended')
    CREATE INDEX [IX_Attempts_Tenant_State_Ended] ON [dbo].[ExecutionAttempts] ([TenantId], [State], [EndedAt])
        INCLUDE ([ProjectId], [AgentId], [ReleaseId], [RunId]);
-- Calls started in a window, by target, status and duration.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.CallRecords') AND name = N'IX_Calls_Tenant_Started')
    CREATE INDEX [IX_Calls_Tenant_Started] ON [dbo].[CallRecords] ([TenantId], [StartedAt])
        INCLUDE ([AttemptId], [Target], [Status], [EndedAt]);
