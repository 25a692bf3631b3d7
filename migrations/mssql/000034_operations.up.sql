-- migration: additive
-- Bulk operations (DESIGN.md 5b): one row per operation with its cursor and lease (any
-- replica takes an operation whose lease has passed, with a conditional write: no leader),
-- and the run ids it matched, fixed when it was created, in Seq order (the cursor is the last
-- Seq done). RequestKey is the idempotency key, or the digest of the body: an exact repeat
-- finds it by UX_Operations_Request. The filtered index is the runners' scan across tenants.
-- Row-level security is added in 000035 (ALTER SECURITY POLICY first in its batch).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[Operations] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [OperationId] uniqueidentifier NOT NULL,
    [RequestKey] nvarchar(300) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [BodyDigest] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Action] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL CONSTRAINT [CK_Operations_Action] CHECK ([Action] IN (N'cancel', N'continue')),
    [Reason] nvarchar(1000) NULL,
    [State] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL CONSTRAINT [CK_Operations_State] CHECK ([State] IN (N'running', N'succeeded')),
    [Matched] bigint NOT NULL,
    [Cursor] bigint NOT NULL,
    [Cancelled] bigint NOT NULL,
    [CancelRequested] bigint NOT NULL,
    [Continued] bigint NOT NULL,
    [SkippedEnded] bigint NOT NULL,
    [SkippedNotEnded] bigint NOT NULL,
    [SkippedExhausted] bigint NOT NULL,
    [SkippedNotFound] bigint NOT NULL,
    [SkippedContinued] bigint NOT NULL,
    [Holder] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [LeaseUntil] datetimeoffset(3) NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [CreatedBy] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [FinishedAt] datetimeoffset(3) NULL,
    CONSTRAINT [PK_Operations] PRIMARY KEY CLUSTERED ([TenantId], [OperationId]),
    CONSTRAINT [FK_Operations_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

CREATE UNIQUE INDEX [UX_Operations_Request] ON [dbo].[Operations] ([TenantId], [RequestKey]);
CREATE INDEX [IX_Operations_Pending] ON [dbo].[Operations] ([LeaseUntil]) INCLUDE ([TenantId], [OperationId]) WHERE [State] = N'running';

CREATE TABLE [dbo].[OperationRuns] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [OperationId] uniqueidentifier NOT NULL,
    [Seq] bigint NOT NULL,
    [RunId] uniqueidentifier NOT NULL,
    [Result] nvarchar(32) COLLATE Latin1_General_100_BIN2 NULL,
    CONSTRAINT [PK_OperationRuns] PRIMARY KEY CLUSTERED ([TenantId], [OperationId], [Seq]),
    CONSTRAINT [FK_OperationRuns_Operations] FOREIGN KEY ([TenantId], [OperationId]) REFERENCES [dbo].[Operations] ([TenantId], [OperationId])
);

COMMIT TRANSACTION;
