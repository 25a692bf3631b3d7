-- Insights (DESIGN.md section 5a): the indexes the aggregate history reads seek, so each
-- insight reads the rows of its window and never a tenant's whole history. Declared
-- additions (internal/schema/declared_additions.go), with their reasons there. Creating an
-- index takes a schema-modification lock on its table while it builds: on a large ledger,
-- run this migration off-peak (or create the indexes ONLINE by hand first, with the same
-- names and definitions, on an edition that allows it).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Runs ended in a window, by outcome, project, agent and kind (and the attempts of each
-- finished run); filtered to ended runs, the only ones with an EndedAt.
CREATE INDEX [IX_Runs_Tenant_Ended] ON [dbo].[Runs] ([TenantId], [EndedAt])
    INCLUDE ([Outcome], [ProjectId], [AgentId], [Kind])
    WHERE [State] = 2;
-- Attempts ended in a window, one range per state (lost and released apart), and the leases
-- lost in the last hour of the console's overview: a seek bounded to the window, not every
-- lost attempt the tenant still holds.
CREATE INDEX [IX_Attempts_Tenant_State_Ended] ON [dbo].[ExecutionAttempts] ([TenantId], [State], [EndedAt])
    INCLUDE ([ProjectId], [AgentId], [ReleaseId], [RunId]);
-- Calls started in a window, by target, status and duration.
CREATE INDEX [IX_Calls_Tenant_Started] ON [dbo].[CallRecords] ([TenantId], [StartedAt])
    INCLUDE ([AttemptId], [Target], [Status], [EndedAt]);

COMMIT TRANSACTION;
