CREATE INDEX IF NOT EXISTS IX_Runs_Tenant_Ended ON Runs (TenantId, EndedAt) WHERE State = 2;
