-- Insights (DESIGN.md section 5a): the indexes the aggregate history reads seek (see
-- migrations/mssql 000017 for the reasons). SQLite has no INCLUDE: a row lookup each.
CREATE INDEX IX_Runs_Tenant_Ended ON Runs (TenantId, EndedAt) WHERE State = 2;
CREATE INDEX IX_Attempts_Tenant_State_Ended ON ExecutionAttempts (TenantId, State, EndedAt);
CREATE INDEX IX_Calls_Tenant_Started ON CallRecords (TenantId, StartedAt);
