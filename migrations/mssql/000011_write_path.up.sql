-- migration: breaking
-- drops the Projects lease counters and indexes a binary before it reads, and its triggers need SubjectHead kept, which such a binary does not do.
-- The write path (DESIGN.md section 4; issues 11 and 12), mirrored in migrations/sqlite 000011.
--
-- Runs gets two declared additions (internal/schema/declared_additions.go):
--   SubjectHead  1 on the one run of a subject that a claim may take: its oldest queued run
--                (QueuedAt, then RunId) while the subject has no leased run; 0 on every
--                other run. Every transaction that changes a subject's queue holds the
--                subject's application lock (internal/runs/queries_mssql.go, lockSubject)
--                and recomputes the marker before it commits. At most one per subject
--                (UX_Runs_SubjectHead); only on a queued run (CK_Runs_HeadIsQueued).
--   RequestHash  the SHA-256 (hex) of the enqueue request's defining fields, so a reused
--                idempotency key can tell an exact repeat from another request.
-- The leased counts move into TenantLeases and ProjectLeases (see below).
--
-- golang-migrate sends this file as one batch without a transaction: XACT_ABORT and an
-- explicit transaction make it all or nothing. The batch is compiled before it runs, so
-- every statement that names a column this file adds is sent through EXEC (compiled when
-- it runs; Msg 207 otherwise), and so is the trigger (CREATE TRIGGER must open its batch,
-- Msg 111) and the security policy change.
--
-- Reading check: the data statements (marking the heads, counting the leases) scan Runs
-- once each, under this transaction's locks (a deploy step; the service should not be
-- serving a migration of this size); OPTION (MAXDOP 1) keeps SESSION_CONTEXT out of
-- parallel plans (TSQL.md). Errors: any error aborts and rolls back everything (XACT_ABORT);
-- the version is then dirty: fix, then `ledger migrate force 10`.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- The data statements read and write every tenant's rows through row-level security
-- (000008): the maintenance bypass, cleared again at the end of the file.
EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = 1;

ALTER TABLE [dbo].[Runs] ADD
    [SubjectHead] bit NOT NULL CONSTRAINT [DF_Runs_SubjectHead] DEFAULT (0),
    [RequestHash] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL;

EXEC(N'ALTER TABLE [dbo].[Runs] ADD CONSTRAINT [CK_Runs_HeadIsQueued] CHECK ([SubjectHead] = 0 OR [State] = 0);');

-- The guard of 000004, with two changes: a queued run may stay queued when only its head
-- marker (and Version) changes, and RequestHash is as immutable as the run's identity.
-- Everything else is as 000004 explains (set-based, NOCOUNT, THROW ends the transaction).
-- INTERSECT treats NULL as equal to NULL and accepts nvarchar(max) (Input).
EXEC(N'CREATE OR ALTER TRIGGER [dbo].[TR_Runs_Guard]
ON [dbo].[Runs]
AFTER UPDATE
AS
BEGIN
    SET NOCOUNT ON;

    IF NOT EXISTS (SELECT 1 FROM inserted)
        RETURN;

    IF UPDATE([RunId])
    BEGIN
        THROW 50001, N''run identity is immutable'', 1;
    END;

    IF UPDATE([TenantId]) OR UPDATE([Subject]) OR UPDATE([ProjectId]) OR UPDATE([Kind])
        OR UPDATE([IdempotencyKey]) OR UPDATE([ParentRunId]) OR UPDATE([ContinuedFromRunId])
        OR UPDATE([RequestHash])
    BEGIN
        IF EXISTS (
            SELECT 1
            FROM inserted AS i
            INNER JOIN deleted AS d ON d.[RunId] = i.[RunId]
            WHERE NOT EXISTS (
                SELECT i.[TenantId], DATALENGTH(i.[TenantId]), i.[Subject], DATALENGTH(i.[Subject]),
                       i.[ProjectId], DATALENGTH(i.[ProjectId]), i.[Kind], DATALENGTH(i.[Kind]),
                       i.[IdempotencyKey], DATALENGTH(i.[IdempotencyKey]),
                       i.[ParentRunId], i.[ContinuedFromRunId], i.[RequestHash]
                INTERSECT
                SELECT d.[TenantId], DATALENGTH(d.[TenantId]), d.[Subject], DATALENGTH(d.[Subject]),
                       d.[ProjectId], DATALENGTH(d.[ProjectId]), d.[Kind], DATALENGTH(d.[Kind]),
                       d.[IdempotencyKey], DATALENGTH(d.[IdempotencyKey]),
                       d.[ParentRunId], d.[ContinuedFromRunId], d.[RequestHash]
            )
        )
        BEGIN
            THROW 50001, N''run identity is immutable'', 1;
        END;
    END;

    IF EXISTS (
        SELECT 1
        FROM inserted AS i
        INNER JOIN deleted AS d ON d.[RunId] = i.[RunId]
        WHERE NOT (
               (d.[State] = 0 AND i.[State] = 1 AND i.[Epoch] = d.[Epoch] + 1)
            OR (d.[State] = 1 AND i.[State] IN (0, 1, 2) AND i.[Epoch] = d.[Epoch])
            OR (d.[State] = 0 AND i.[State] = 2 AND i.[Epoch] = d.[Epoch])
            OR (d.[State] = 0 AND i.[State] = 0 AND i.[Epoch] = d.[Epoch] AND i.[SubjectHead] <> d.[SubjectHead]
                AND EXISTS (
                    SELECT i.[EnvironmentId], i.[AgentId], i.[StepId], i.[SnapshotId], i.[Input], i.[Band],
                           i.[HolderId], i.[LeaseSeconds], i.[LeasedUntil], i.[Attempt], i.[MaxAttempts],
                           i.[MaxCorrections], i.[QueuedAt], i.[DueAt], i.[DeadlineAt], i.[EndedAt], i.[Outcome],
                           i.[ErrorCode], i.[ErrorMessage], i.[CancelRequestedAt], i.[Depth], i.[CreatedBy]
                    INTERSECT
                    SELECT d.[EnvironmentId], d.[AgentId], d.[StepId], d.[SnapshotId], d.[Input], d.[Band],
                           d.[HolderId], d.[LeaseSeconds], d.[LeasedUntil], d.[Attempt], d.[MaxAttempts],
                           d.[MaxCorrections], d.[QueuedAt], d.[DueAt], d.[DeadlineAt], d.[EndedAt], d.[Outcome],
                           d.[ErrorCode], d.[ErrorMessage], d.[CancelRequestedAt], d.[Depth], d.[CreatedBy]
                ))
        )
    )
    BEGIN
        THROW 50002, N''illegal run transition'', 1;
    END;
END;');

-- Mark the heads of the runs already queued: the definition above as one statement.
-- Seeks IX_Runs_SubjectQueue and UX_Runs_LeasedSubject per queued run.
EXEC(N'UPDATE r SET [SubjectHead] = 1
FROM [dbo].[Runs] AS r
WHERE r.[State] = 0
    AND NOT EXISTS (SELECT 1 FROM [dbo].[Runs] AS l
        WHERE l.[TenantId] = r.[TenantId] AND l.[Subject] = r.[Subject] AND l.[State] = 1)
    AND NOT EXISTS (SELECT 1 FROM [dbo].[Runs] AS o
        WHERE o.[TenantId] = r.[TenantId] AND o.[Subject] = r.[Subject] AND o.[State] = 0
            AND o.[QueuedAt] <= r.[QueuedAt] AND (o.[QueuedAt] < r.[QueuedAt] OR o.[RunId] < r.[RunId]))
OPTION (MAXDOP 1);');

-- The claim seeks heads only: one per subject, so its window needs no sibling probes. The
-- INCLUDE list covers what the claim reads of a candidate, so there is no lookup.
DROP INDEX [IX_Runs_Claim] ON [dbo].[Runs];
EXEC(N'CREATE INDEX [IX_Runs_Claim] ON [dbo].[Runs] ([TenantId], [Band], [DueAt], [RunId])
    INCLUDE ([ProjectId], [Subject], [CancelRequestedAt], [Kind], [AgentId])
    WHERE [SubjectHead] = 1;');
-- A subject's queue, as 000003 made it, now also covering the queued runs' ProjectId, Band
-- and DueAt: the overview's and the metrics' queue counts (internal/overview: per tenant,
-- and across tenants) used to be covered by IX_Runs_Claim, which held every queued run
-- before this file redefined it to the heads; without these columns they would look each
-- queued run up in PK_Runs or scan the whole table, history included. The index changes
-- exactly when it did (a run enters or leaves the queue); a requeue, the only write that
-- moves a queued run's DueAt, re-enters it anyway. Created after the heads are marked
-- (that statement seeks the old definition).
DROP INDEX [IX_Runs_SubjectQueue] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_SubjectQueue] ON [dbo].[Runs] ([TenantId], [Subject], [QueuedAt], [RunId])
    INCLUDE ([ProjectId], [Band], [DueAt])
    WHERE [State] = 0;
-- At most one head per subject (2601 here is a bug, never a race: the subject lock
-- serialises every marker change of a subject); also how a marker change finds the
-- subject's current head.
EXEC(N'CREATE UNIQUE INDEX [UX_Runs_SubjectHead] ON [dbo].[Runs] ([TenantId], [Subject]) WHERE [SubjectHead] = 1;');
-- Unfiltered, so the purge's self-referencing foreign-key checks (FK_Runs_ParentRun,
-- FK_Runs_ContinuedFromRun: deleting a run checks that no run refers to it) can seek them;
-- the optimiser may not match a filtered index for a foreign-key check.
DROP INDEX [IX_Runs_Parent] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_Parent] ON [dbo].[Runs] ([ParentRunId]);
CREATE INDEX [IX_Runs_ContinuedFromRunId] ON [dbo].[Runs] ([ContinuedFromRunId]);

-- Leased counts, kept in the transactions that lease and unlease runs. They live in their
-- own tables, not on Projects or Tenants: a count on Projects changed the project's
-- rowversion (its ETag) at every claim, so admins' If-Match updates of busy projects
-- failed (412); and no foreign key refers to these rows, so an insert that checks its
-- tenant or project (a locking read even under RCSI) never waits on a counter being
-- updated. A missing row counts 0 (the claim creates it).
CREATE TABLE [dbo].[TenantLeases] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [LeasedCount] int NOT NULL CONSTRAINT [DF_TenantLeases_LeasedCount] DEFAULT (0),
    CONSTRAINT [PK_TenantLeases] PRIMARY KEY CLUSTERED ([TenantId]),
    CONSTRAINT [FK_TenantLeases_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId]),
    CONSTRAINT [CK_TenantLeases_LeasedCount] CHECK ([LeasedCount] >= 0)
);
CREATE TABLE [dbo].[ProjectLeases] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ProjectId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [LeasedCount] int NOT NULL CONSTRAINT [DF_ProjectLeases_LeasedCount] DEFAULT (0),
    CONSTRAINT [PK_ProjectLeases] PRIMARY KEY CLUSTERED ([TenantId], [ProjectId]),
    CONSTRAINT [FK_ProjectLeases_Projects] FOREIGN KEY ([TenantId], [ProjectId]) REFERENCES [dbo].[Projects] ([TenantId], [ProjectId]),
    CONSTRAINT [CK_ProjectLeases_LeasedCount] CHECK ([LeasedCount] >= 0)
);
-- Counted from the runs themselves, the source of truth (UX_Runs_LeasedSubject covers it).
INSERT INTO [dbo].[TenantLeases] ([TenantId], [LeasedCount])
SELECT t.[TenantId], (SELECT COUNT(*) FROM [dbo].[Runs] AS r WHERE r.[TenantId] = t.[TenantId] AND r.[State] = 1)
FROM [dbo].[Tenants] AS t
OPTION (MAXDOP 1);
INSERT INTO [dbo].[ProjectLeases] ([TenantId], [ProjectId], [LeasedCount])
SELECT p.[TenantId], p.[ProjectId],
    (SELECT COUNT(*) FROM [dbo].[Runs] AS r WHERE r.[TenantId] = p.[TenantId] AND r.[ProjectId] = p.[ProjectId] AND r.[State] = 1)
FROM [dbo].[Projects] AS p
OPTION (MAXDOP 1);
ALTER TABLE [dbo].[Projects] DROP CONSTRAINT [CK_Projects_LeasedCount];
ALTER TABLE [dbo].[Projects] DROP CONSTRAINT [DF_Projects_LeasedCount];
ALTER TABLE [dbo].[Projects] DROP COLUMN [LeasedCount];

-- Row-level security on the counters, as on every tenant table (000008).
EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[TenantLeases] AFTER UPDATE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ProjectLeases] AFTER UPDATE;');

EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = NULL;

COMMIT TRANSACTION;
