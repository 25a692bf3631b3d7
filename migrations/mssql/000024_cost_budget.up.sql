-- migration: additive
-- A project's daily cost budget and the cost counter per project and UTC day (DESIGN.md 5b,
-- issue 31; see migrations/sqlite 000024). The new column is nullable with no default (a
-- metadata change); the counter table is new and empty. The security policy change goes
-- through EXEC: the batch is compiled before the table exists.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE [dbo].[Projects] ADD [DailyCostBudgetMicros] bigint NULL
    CONSTRAINT [CK_Projects_DailyCostBudgetMicros] CHECK ([DailyCostBudgetMicros] >= 0);

CREATE TABLE [dbo].[ProjectDailyCosts] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Day] date NOT NULL,
    [CostMicros] bigint NOT NULL,
    CONSTRAINT [PK_ProjectDailyCosts] PRIMARY KEY CLUSTERED ([TenantId], [Day], [ProjectId]),
    CONSTRAINT [FK_ProjectDailyCosts_Projects] FOREIGN KEY ([TenantId], [ProjectId])
        REFERENCES [dbo].[Projects] ([TenantId], [ProjectId]),
    CONSTRAINT [CK_ProjectDailyCosts_CostMicros] CHECK ([CostMicros] >= 0)
);

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectDailyCosts],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectDailyCosts] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectDailyCosts] AFTER UPDATE;');

COMMIT TRANSACTION;
