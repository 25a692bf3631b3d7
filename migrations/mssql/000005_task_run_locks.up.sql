-- migration: additive
-- Seed 000's task run lock, keyed by tenant. No agents table here, so no foreign key on AgentId.
CREATE TABLE [dbo].[TaskRunLocks] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [AgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [TaskId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [HolderId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [HeldUntil] datetimeoffset(3) NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [UpdatedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_TaskRunLocks] PRIMARY KEY CLUSTERED ([TenantId], [AgentId], [TaskId]),
    CONSTRAINT [FK_TaskRunLocks_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);
