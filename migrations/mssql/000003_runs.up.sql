-- migration: additive
-- The run-lease core (DESIGN.md section 4). State: 0 queued, 1 leased, 2 ended.
-- Band: 0 interactive, 1 batch, 2 background. Outcome holds the wire string.
-- Columns, checks, keys and indexes mirror migrations/sqlite/000003_runs.up.sql.
--
-- RunId is the clustered key. SQL Server orders uniqueidentifier by its last 6 bytes first,
-- so the service generates ids whose last 6 bytes are a timestamp (COMB layout) to keep
-- inserts at the end of the clustered index.
-- dbo.Runs gets an AFTER UPDATE trigger in 000004: from then on an UPDATE or MERGE on it
-- refuses OUTPUT without INTO (Msg 334). Always OUTPUT ... INTO a table variable.
-- Filtered indexes are used only by statements whose WHERE repeats the filter with the same
-- literal (State = 0 / State = 1), never a parameter; they also need the session options
-- go-mssqldb sets (QUOTED_IDENTIFIER, ANSI_NULLS, ... ON) on every write (else Msg 1934).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[Runs] (
    [RunId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [EnvironmentId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [Subject] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Kind] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [AgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [StepId] uniqueidentifier NOT NULL,
    [SnapshotId] uniqueidentifier NOT NULL,
    [Input] nvarchar(max) NULL,
    [Band] int NOT NULL,
    [State] int NOT NULL,
    [Epoch] bigint NOT NULL,
    [HolderId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [LeaseSeconds] int NULL,
    [LeasedUntil] datetimeoffset(3) NULL,
    [Attempt] int NOT NULL,
    [MaxAttempts] int NOT NULL,
    [MaxCorrections] int NOT NULL,
    [QueuedAt] datetimeoffset(3) NOT NULL,
    [DueAt] datetimeoffset(3) NOT NULL,
    [DeadlineAt] datetimeoffset(3) NULL,
    [EndedAt] datetimeoffset(3) NULL,
    [Outcome] nvarchar(16) COLLATE Latin1_General_100_BIN2 NULL,
    [ErrorCode] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [ErrorMessage] nvarchar(2000) NULL,
    [CancelRequestedAt] datetimeoffset(3) NULL,
    [IdempotencyKey] nvarchar(256) COLLATE Latin1_General_100_BIN2 NULL,
    [ParentRunId] uniqueidentifier NULL,
    [Depth] int NOT NULL,
    [ContinuedFromRunId] uniqueidentifier NULL,
    [CreatedBy] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_Runs] PRIMARY KEY CLUSTERED ([RunId]),
    CONSTRAINT [FK_Runs_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId]),
    CONSTRAINT [FK_Runs_Projects] FOREIGN KEY ([TenantId], [ProjectId]) REFERENCES [dbo].[Projects] ([TenantId], [ProjectId]),
    CONSTRAINT [FK_Runs_ParentRun] FOREIGN KEY ([ParentRunId]) REFERENCES [dbo].[Runs] ([RunId]),
    CONSTRAINT [FK_Runs_ContinuedFromRun] FOREIGN KEY ([ContinuedFromRunId]) REFERENCES [dbo].[Runs] ([RunId]),
    CONSTRAINT [CK_Runs_Band] CHECK ([Band] IN (0, 1, 2)),
    CONSTRAINT [CK_Runs_State] CHECK ([State] IN (0, 1, 2)),
    CONSTRAINT [CK_Runs_Epoch] CHECK ([Epoch] >= 0),
    CONSTRAINT [CK_Runs_Attempt] CHECK ([Attempt] >= 0),
    CONSTRAINT [CK_Runs_MaxAttempts] CHECK ([MaxAttempts] >= 1),
    CONSTRAINT [CK_Runs_MaxCorrections] CHECK ([MaxCorrections] >= 0),
    CONSTRAINT [CK_Runs_Outcome] CHECK ([Outcome] IN (N'succeeded', N'failed', N'cancelled', N'exhausted', N'deadline')),
    CONSTRAINT [CK_Runs_Depth] CHECK ([Depth] >= 0),
    CONSTRAINT [CK_Runs_LeasedHasHolder] CHECK ([State] <> 1 OR ([LeasedUntil] IS NOT NULL AND [HolderId] IS NOT NULL)),
    -- SQLite writes this as (State = 2) = (EndedAt IS NOT NULL AND Outcome IS NOT NULL);
    -- T-SQL has no boolean equality, so both directions are spelled out. State is NOT NULL,
    -- so each side is TRUE or FALSE, never UNKNOWN.
    CONSTRAINT [CK_Runs_EndedHasOutcome] CHECK (
        ([State] = 2 AND [EndedAt] IS NOT NULL AND [Outcome] IS NOT NULL)
        OR ([State] <> 2 AND ([EndedAt] IS NULL OR [Outcome] IS NULL))
    )
);

-- At most one leased run per subject. A duplicate here is Msg 2601: the claim treats it as
-- "try the next candidate".
CREATE UNIQUE INDEX [UX_Runs_LeasedSubject] ON [dbo].[Runs] ([TenantId], [Subject]) WHERE [State] = 1;
-- The claim seeks queued runs of a tenant by band and due time; INCLUDE covers every column
-- the candidate query reads, so the seek needs no lookup into the clustered index.
CREATE INDEX [IX_Runs_Claim] ON [dbo].[Runs] ([TenantId], [Band], [DueAt], [RunId])
    INCLUDE ([ProjectId], [Subject], [QueuedAt], [CancelRequestedAt], [Kind], [AgentId])
    WHERE [State] = 0;
-- Queue order within a subject: the head is the oldest queued run.
CREATE INDEX [IX_Runs_SubjectQueue] ON [dbo].[Runs] ([TenantId], [Subject], [QueuedAt], [RunId]) WHERE [State] = 0;
-- Unique indexes on nullable columns are filtered: unfiltered, SQL Server would allow one NULL.
CREATE UNIQUE INDEX [UX_Runs_Idempotency] ON [dbo].[Runs] ([TenantId], [IdempotencyKey]) WHERE [IdempotencyKey] IS NOT NULL;
CREATE UNIQUE INDEX [UX_Runs_ContinuedFrom] ON [dbo].[Runs] ([ContinuedFromRunId]) WHERE [ContinuedFromRunId] IS NOT NULL;
-- The reaper finds expired leases and overdue queued runs across tenants.
CREATE INDEX [IX_Runs_LeaseExpiry] ON [dbo].[Runs] ([LeasedUntil]) WHERE [State] = 1;
CREATE INDEX [IX_Runs_QueuedDeadline] ON [dbo].[Runs] ([DeadlineAt]) WHERE [State] = 0 AND [DeadlineAt] IS NOT NULL;
-- History listing, newest first.
CREATE INDEX [IX_Runs_Tenant_Queued] ON [dbo].[Runs] ([TenantId], [QueuedAt], [RunId]);
CREATE INDEX [IX_Runs_Parent] ON [dbo].[Runs] ([ParentRunId]) WHERE [ParentRunId] IS NOT NULL;

COMMIT TRANSACTION;
