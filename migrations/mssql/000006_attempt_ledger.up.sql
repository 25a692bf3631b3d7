-- migration: additive
-- Seed 001's six tables (shared/seeds/001_*.txt), kept column for column: names, types
-- (datetimeoffset without a precision, as the seed has it), nullability, defaults, key and
-- index names. Everything else is a declared addition, listed with its reason in
-- internal/schema/declared_additions.go and checked by internal/schema/parity_test.go:
--   - COLLATE Latin1_General_100_BIN2 on the identifier, status and hash columns
--     (DESIGN.md section 3: they compare case-sensitively, as on SQLite);
--   - Version rowversion on CallRecords, DecisionRequests, SubAgentDelegations and
--     LoadedReleases; AdapterVersion on ExecutionAttempts; AnswerJson, AnsweredBy and
--     ExpiresAt on DecisionRequests; CreatedAt on SubAgentDelegations (DESIGN.md section 5);
--   - the indexes history queries need (DESIGN.md section 5).
-- Seed columns keep the seed's order; added columns follow them, as in migrations/sqlite.
-- Enum ints as in DESIGN.md section 7a; Status columns hold the wire string.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[ExecutionAttempts] (
    [AttemptId] uniqueidentifier NOT NULL,
    [RunId] uniqueidentifier NOT NULL,
    [StepId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [EnvironmentId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [LeaseId] uniqueidentifier NOT NULL,
    [FencingToken] bigint NOT NULL,
    [SnapshotId] uniqueidentifier NOT NULL,
    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [AgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ModelProfileId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [State] int NOT NULL,
    [Phase] int NOT NULL,
    [CorrectionCount] int NOT NULL DEFAULT (0),
    [MaxCorrections] int NOT NULL,
    [LastCheckpointId] uniqueidentifier NULL,
    [ContextSnapshotRef] nvarchar(512) NULL,
    [OutcomeHash] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [CancellationObservedAt] datetimeoffset NULL,
    [StartedAt] datetimeoffset NOT NULL,
    [EndedAt] datetimeoffset NULL,
    [Version] rowversion NOT NULL,
    [AdapterVersion] nvarchar(32) COLLATE Latin1_General_100_BIN2 NOT NULL,
    CONSTRAINT [PK_ExecutionAttempts] PRIMARY KEY ([AttemptId])
);
CREATE UNIQUE INDEX [UX_Attempts_Lease] ON [dbo].[ExecutionAttempts] ([LeaseId]);
CREATE INDEX [IX_Attempts_Run_Step] ON [dbo].[ExecutionAttempts] ([RunId], [StepId]);
CREATE INDEX [IX_Attempts_Tenant_State] ON [dbo].[ExecutionAttempts] ([TenantId], [State]);
CREATE INDEX [IX_Attempts_Tenant_Started] ON [dbo].[ExecutionAttempts] ([TenantId], [StartedAt], [AttemptId]);
CREATE INDEX [IX_Attempts_Tenant_Version] ON [dbo].[ExecutionAttempts] ([TenantId], [Version], [AttemptId]);
CREATE INDEX [IX_Attempts_Release] ON [dbo].[ExecutionAttempts] ([ReleaseId], [AdapterVersion], [State]);

CREATE TABLE [dbo].[Checkpoints] (
    [CheckpointId] uniqueidentifier NOT NULL,
    [AttemptId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Sequence] int NOT NULL,
    [Phase] int NOT NULL,
    [AdapterStateRef] nvarchar(512) NOT NULL,
    [AdapterVersion] nvarchar(32) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ContextSnapshotRef] nvarchar(512) NULL,
    [Hash] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [CreatedAt] datetimeoffset NOT NULL,
    CONSTRAINT [PK_Checkpoints] PRIMARY KEY ([CheckpointId])
);
ALTER TABLE [dbo].[Checkpoints] ADD CONSTRAINT [FK_Checkpoints_ExecutionAttempts_AttemptId] FOREIGN KEY ([AttemptId]) REFERENCES [dbo].[ExecutionAttempts] ([AttemptId]);
CREATE UNIQUE INDEX [UX_Checkpoints_Attempt_Sequence] ON [dbo].[Checkpoints] ([AttemptId], [Sequence]);

CREATE TABLE [dbo].[CallRecords] (
    [CallId] uniqueidentifier NOT NULL,
    [AttemptId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Sequence] int NOT NULL,
    [Kind] int NOT NULL,
    [Target] nvarchar(256) NOT NULL,
    [RequestHash] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [PolicyDecisionId] uniqueidentifier NULL,
    [ReceiptRef] nvarchar(512) NULL,
    [Status] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [StartedAt] datetimeoffset NOT NULL,
    [EndedAt] datetimeoffset NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_CallRecords] PRIMARY KEY ([CallId])
);
ALTER TABLE [dbo].[CallRecords] ADD CONSTRAINT [FK_CallRecords_ExecutionAttempts_AttemptId] FOREIGN KEY ([AttemptId]) REFERENCES [dbo].[ExecutionAttempts] ([AttemptId]);
CREATE UNIQUE INDEX [UX_Calls_Attempt_Sequence] ON [dbo].[CallRecords] ([AttemptId], [Sequence]);

CREATE TABLE [dbo].[DecisionRequests] (
    [DecisionId] uniqueidentifier NOT NULL,
    [AttemptId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Kind] int NOT NULL,
    [ApprovalId] uniqueidentifier NULL,
    [ProposalHash] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [OptionsJson] nvarchar(max) NULL,
    [Recommendation] nvarchar(2000) NULL,
    [Status] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [RequestedAt] datetimeoffset NOT NULL,
    [AnsweredAt] datetimeoffset NULL,
    [Version] rowversion NOT NULL,
    [AnswerJson] nvarchar(max) NULL,
    [AnsweredBy] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [ExpiresAt] datetimeoffset NULL,
    CONSTRAINT [PK_DecisionRequests] PRIMARY KEY ([DecisionId])
);
ALTER TABLE [dbo].[DecisionRequests] ADD CONSTRAINT [FK_DecisionRequests_ExecutionAttempts_AttemptId] FOREIGN KEY ([AttemptId]) REFERENCES [dbo].[ExecutionAttempts] ([AttemptId]);
CREATE INDEX [IX_Decisions_Tenant_Status] ON [dbo].[DecisionRequests] ([TenantId], [Status], [RequestedAt], [DecisionId]);
CREATE INDEX [IX_Decisions_Attempt] ON [dbo].[DecisionRequests] ([AttemptId], [RequestedAt]);
-- The reaper's scan for expired pending decisions. The literal is nvarchar like the column.
CREATE INDEX [IX_Decisions_PendingExpiry] ON [dbo].[DecisionRequests] ([ExpiresAt]) WHERE [Status] = N'pending' AND [ExpiresAt] IS NOT NULL;

CREATE TABLE [dbo].[SubAgentDelegations] (
    [DelegationId] uniqueidentifier NOT NULL,
    [AttemptId] uniqueidentifier NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ChildRunId] uniqueidentifier NOT NULL,
    [ChildAgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Purpose] nvarchar(1024) NOT NULL,
    [Depth] int NOT NULL,
    [Status] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Version] rowversion NOT NULL,
    [CreatedAt] datetimeoffset NOT NULL,
    CONSTRAINT [PK_SubAgentDelegations] PRIMARY KEY ([DelegationId])
);
ALTER TABLE [dbo].[SubAgentDelegations] ADD CONSTRAINT [FK_SubAgentDelegations_ExecutionAttempts_AttemptId] FOREIGN KEY ([AttemptId]) REFERENCES [dbo].[ExecutionAttempts] ([AttemptId]);
CREATE UNIQUE INDEX [UX_Delegations_ChildRun] ON [dbo].[SubAgentDelegations] ([ChildRunId]);
CREATE INDEX [IX_Delegations_Attempt] ON [dbo].[SubAgentDelegations] ([AttemptId], [CreatedAt]);

CREATE TABLE [dbo].[LoadedReleases] (
    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [AdapterVersion] nvarchar(32) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ManifestHash] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ContentRefsJson] nvarchar(max) NOT NULL,
    [State] int NOT NULL,
    [VerifiedAt] datetimeoffset NOT NULL,
    [InFlightPolicy] nvarchar(16) COLLATE Latin1_General_100_BIN2 NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_LoadedReleases] PRIMARY KEY ([ReleaseId], [AdapterVersion])
);

COMMIT TRANSACTION;
