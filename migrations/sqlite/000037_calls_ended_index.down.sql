DROP INDEX IX_Calls_Tenant_Ended;
