-- migration: additive
-- The indexes on 000028's DecisionRequests columns (declared additions): a decision's
-- idempotency key is unique per run (filtered: most decisions have none), and a run's
-- decisions are read across its attempts by RunId. And the run guard of 000011 with one more
-- transition: a queued run stays queued with an earlier DueAt and nothing else changed (a
-- parked run woken by its last condition, runs.CloseWaits); EXEC'd, as CREATE TRIGGER must
-- open its batch.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE UNIQUE INDEX [UX_Decisions_Idempotency] ON [dbo].[DecisionRequests] ([TenantId], [RunId], [IdempotencyKey])
    WHERE [IdempotencyKey] IS NOT NULL;

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
            OR (d.[State] = 0 AND i.[State] = 0 AND i.[Epoch] = d.[Epoch] AND i.[DueAt] < d.[DueAt]
                AND EXISTS (
                    SELECT i.[SubjectHead], i.[EnvironmentId], i.[AgentId], i.[StepId], i.[SnapshotId], i.[Input], i.[Band],
                           i.[HolderId], i.[LeaseSeconds], i.[LeasedUntil], i.[Attempt], i.[MaxAttempts],
                           i.[MaxCorrections], i.[QueuedAt], i.[DeadlineAt], i.[EndedAt], i.[Outcome],
                           i.[ErrorCode], i.[ErrorMessage], i.[CancelRequestedAt], i.[Depth], i.[CreatedBy]
                    INTERSECT
                    SELECT d.[SubjectHead], d.[EnvironmentId], d.[AgentId], d.[StepId], d.[SnapshotId], d.[Input], d.[Band],
                           d.[HolderId], d.[LeaseSeconds], d.[LeasedUntil], d.[Attempt], d.[MaxAttempts],
                           d.[MaxCorrections], d.[QueuedAt], d.[DeadlineAt], d.[EndedAt], d.[Outcome],
                           d.[ErrorCode], d.[ErrorMessage], d.[CancelRequestedAt], d.[Depth], d.[CreatedBy]
                ))
        )
    )
    BEGIN
        THROW 50002, N''illegal run transition'', 1;
    END;
END;');

COMMIT TRANSACTION;
