-- migration: additive
-- Projections of the committed change feed (DESIGN.md 5a, 5b; internal/feed): the position
-- and lease of each projector, and the insights roll-ups the first projector maintains.
-- New tables and indexes only: an older binary never reads them. Row-level security for the
-- two tenant tables is added in 000027 (ALTER SECURITY POLICY first in its batch). The four
-- Version indexes are declared additions (internal/schema/declared_additions.go). Creating an
-- index takes a schema-modification lock on its table while it builds: on a large ledger,
-- run this migration off-peak.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Not tenant data: one row per projector, read and written in maintenance scope. Position is
-- the last rowversion applied (binary(8), as rowversion compares).
CREATE TABLE [dbo].[FeedProjectors] (
    [Name] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Position] binary(8) NOT NULL,
    [Holder] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [LeaseUntil] datetimeoffset(3) NULL,
    [CaughtUpAt] datetimeoffset(3) NULL,
    [UpdatedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_FeedProjectors] PRIMARY KEY CLUSTERED ([Name])
);

-- One cell of a roll-up (see migrations/sqlite 000026). CellHash (SHA-256 of the dimensions)
-- keeps the clustered key far under 900 bytes whatever the identifiers' lengths; a window's
-- read is one seek of (TenantId, Metric, DimSet, Grain, BucketStart range).
CREATE TABLE [dbo].[InsightCells] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Metric] tinyint NOT NULL,
    [DimSet] tinyint NOT NULL,
    [Grain] int NOT NULL,
    [BucketStart] bigint NOT NULL,
    [CellHash] binary(32) NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [AgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Kind] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ErrorCode] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Subkey] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Series] nvarchar(32) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Bin] smallint NOT NULL,
    [N] bigint NOT NULL,
    [Peak] bigint NOT NULL,
    CONSTRAINT [PK_InsightCells] PRIMARY KEY CLUSTERED ([TenantId], [Metric], [DimSet], [Grain], [BucketStart], [CellHash]),
    CONSTRAINT [FK_InsightCells_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

-- What each source row contributes to the cells (see migrations/sqlite 000026).
CREATE TABLE [dbo].[InsightFacts] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Source] tinyint NOT NULL,
    [SourceId] uniqueidentifier NOT NULL,
    [Facts] nvarchar(max) NOT NULL,
    CONSTRAINT [PK_InsightFacts] PRIMARY KEY CLUSTERED ([TenantId], [Source], [SourceId]),
    CONSTRAINT [FK_InsightFacts_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

-- The projector reads each table's rows in rowversion order across tenants. Each index
-- carries what the projector reads of its row (INCLUDE), so the read never looks the row up:
-- without it, a writer changing a row (and so its Version, this index's key) while the
-- projector reads it would be the reader-lookup deadlock of issue 26's reading (S on the
-- index row waiting for the clustered row, X on the clustered row waiting for the index).
CREATE INDEX [IX_Runs_Version] ON [dbo].[Runs] ([Version])
    INCLUDE ([TenantId], [State], [Outcome], [ProjectId], [AgentId], [Kind], [QueuedAt], [EndedAt], [ErrorCode]);
CREATE INDEX [IX_Attempts_Version] ON [dbo].[ExecutionAttempts] ([Version])
    INCLUDE ([TenantId], [RunId], [State], [EndedAt], [ProjectId], [AgentId], [ReleaseId], [ErrorCode]);
CREATE INDEX [IX_Calls_Version] ON [dbo].[CallRecords] ([Version])
    INCLUDE ([TenantId], [AttemptId], [Target], [Status], [StartedAt], [EndedAt], [Model], [InputTokens], [OutputTokens],
        [CacheReadInputTokens], [CacheCreationInputTokens], [ReasoningOutputTokens], [CostMicros]);
CREATE INDEX [IX_Decisions_Version] ON [dbo].[DecisionRequests] ([Version])
    INCLUDE ([TenantId], [AttemptId], [Kind], [Status], [RequestedAt], [AnsweredAt]);

COMMIT TRANSACTION;
