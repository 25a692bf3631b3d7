-- migration: additive
-- Insights (DESIGN.md section 5a): the indexes the aggregate history reads seek (see
-- migrations/mssql 000018 for the reasons). SQLite has no INCLUDE: a row lookup each.
-- IF NOT EXISTS: an index made by hand first, or a second run, is not an error (as the
-- SQL Server file's existence checks).
CREATE INDEX IF NOT EXISTS IX_Runs_Tenant_Ended ON Runs (TenantId, EndedAt) WHERE State = 2;
CREATE INDEX IF NOT EXISTS IX_Attempts_Tenant_State_Ended ON ExecutionAttempts (TenantId, State, EndedAt);
CREATE INDEX IF NOT EXISTS IX_Calls_Tenant_Started ON CallRecords (TenantId, StartedAt);
