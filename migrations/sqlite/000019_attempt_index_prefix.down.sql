CREATE INDEX IX_Attempts_Tenant_State ON ExecutionAttempts (TenantId, State);
