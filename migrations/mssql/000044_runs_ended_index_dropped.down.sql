IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Runs') AND name = N'IX_Runs_Tenant_Ended')
    CREATE INDEX [IX_Runs_Tenant_Ended] ON [dbo].[Runs] ([TenantId], [EndedAt])
        INCLUDE ([Outcome], [ProjectId], [AgentId], [Kind])
        WHERE [State] = 2;
