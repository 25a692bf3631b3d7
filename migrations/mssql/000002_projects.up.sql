-- migration: additive
-- Projects (the workspace of a run). Version is SQL Server's own rowversion: stamped on
-- every insert and update, never written by the service; the ETag is its hex.
-- SQLite's CHECK (Active IN (0, 1)) has no counterpart: a bit holds only 0 and 1.
CREATE TABLE [dbo].[Projects] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Active] bit NOT NULL CONSTRAINT [DF_Projects_Active] DEFAULT (1),
    [RetentionDays] int NOT NULL CONSTRAINT [DF_Projects_RetentionDays] DEFAULT (365),
    [LeasedCount] int NOT NULL CONSTRAINT [DF_Projects_LeasedCount] DEFAULT (0),
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [UpdatedAt] datetimeoffset(3) NOT NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_Projects] PRIMARY KEY CLUSTERED ([TenantId], [ProjectId]),
    CONSTRAINT [FK_Projects_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId]),
    CONSTRAINT [CK_Projects_RetentionDays] CHECK ([RetentionDays] > 0),
    CONSTRAINT [CK_Projects_LeasedCount] CHECK ([LeasedCount] >= 0)
);
