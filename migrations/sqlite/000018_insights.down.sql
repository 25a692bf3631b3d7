DROP INDEX IX_Calls_Tenant_Started;
DROP INDEX IX_Attempts_Tenant_State_Ended;
DROP INDEX IX_Runs_Tenant_Ended;
