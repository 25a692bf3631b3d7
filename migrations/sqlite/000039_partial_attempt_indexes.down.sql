DROP INDEX IX_Attempts_Tenant_State_Ended;
CREATE INDEX IX_Attempts_Tenant_State_Ended ON ExecutionAttempts (TenantId, State, EndedAt);
DROP INDEX IX_Attempts_Release;
CREATE INDEX IX_Attempts_Release ON ExecutionAttempts (ReleaseId, AdapterVersion, State);
