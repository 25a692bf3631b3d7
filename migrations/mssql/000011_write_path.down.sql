-- Reverses 000011: the leased count goes back on Projects (from ProjectLeases), the head
-- marker and request hash leave Runs, and the guard of 000004 returns. One transaction, as
-- the up file; statements naming columns this file adds or drops go through EXEC (the
-- batch is compiled before it runs).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = 1;

-- The counters leave the security policy first: it is schema-bound to them.
EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[TenantLeases],
    DROP BLOCK PREDICATE ON [dbo].[TenantLeases] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[TenantLeases] AFTER UPDATE,
    DROP FILTER PREDICATE ON [dbo].[ProjectLeases],
    DROP BLOCK PREDICATE ON [dbo].[ProjectLeases] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[ProjectLeases] AFTER UPDATE;');
ALTER TABLE [dbo].[Projects] ADD [LeasedCount] int NOT NULL CONSTRAINT [DF_Projects_LeasedCount] DEFAULT (0)
    CONSTRAINT [CK_Projects_LeasedCount] CHECK ([LeasedCount] >= 0);
EXEC(N'UPDATE p SET [LeasedCount] = l.[LeasedCount]
FROM [dbo].[Projects] AS p
INNER JOIN [dbo].[ProjectLeases] AS l ON l.[TenantId] = p.[TenantId] AND l.[ProjectId] = p.[ProjectId]
OPTION (MAXDOP 1);');
DROP TABLE [dbo].[ProjectLeases];
DROP TABLE [dbo].[TenantLeases];

DROP INDEX [IX_Runs_ContinuedFromRunId] ON [dbo].[Runs];
DROP INDEX [IX_Runs_Parent] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_Parent] ON [dbo].[Runs] ([ParentRunId]) WHERE [ParentRunId] IS NOT NULL;
DROP INDEX [IX_Runs_SubjectQueue] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_SubjectQueue] ON [dbo].[Runs] ([TenantId], [Subject], [QueuedAt], [RunId]) WHERE [State] = 0;
DROP INDEX [UX_Runs_SubjectHead] ON [dbo].[Runs];
DROP INDEX [IX_Runs_Claim] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_Claim] ON [dbo].[Runs] ([TenantId], [Band], [DueAt], [RunId])
    INCLUDE ([ProjectId], [Subject], [QueuedAt], [CancelRequestedAt], [Kind], [AgentId])
    WHERE [State] = 0;

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
    BEGIN
        -- INTERSECT treats NULL as equal to NULL, which is what the nullable columns need.
        IF EXISTS (
            SELECT 1
            FROM inserted AS i
            INNER JOIN deleted AS d ON d.[RunId] = i.[RunId]
            WHERE NOT EXISTS (
                SELECT i.[TenantId], DATALENGTH(i.[TenantId]), i.[Subject], DATALENGTH(i.[Subject]),
                       i.[ProjectId], DATALENGTH(i.[ProjectId]), i.[Kind], DATALENGTH(i.[Kind]),
                       i.[IdempotencyKey], DATALENGTH(i.[IdempotencyKey]),
                       i.[ParentRunId], i.[ContinuedFromRunId]
                INTERSECT
                SELECT d.[TenantId], DATALENGTH(d.[TenantId]), d.[Subject], DATALENGTH(d.[Subject]),
                       d.[ProjectId], DATALENGTH(d.[ProjectId]), d.[Kind], DATALENGTH(d.[Kind]),
                       d.[IdempotencyKey], DATALENGTH(d.[IdempotencyKey]),
                       d.[ParentRunId], d.[ContinuedFromRunId]
            )
        )
        BEGIN
            THROW 50001, N''run identity is immutable'', 1;
        END;
    END;

    -- State and Epoch are NOT NULL, so the condition is TRUE or FALSE for every row.
    IF EXISTS (
        SELECT 1
        FROM inserted AS i
        INNER JOIN deleted AS d ON d.[RunId] = i.[RunId]
        WHERE NOT (
               (d.[State] = 0 AND i.[State] = 1 AND i.[Epoch] = d.[Epoch] + 1)
            OR (d.[State] = 1 AND i.[State] IN (0, 1, 2) AND i.[Epoch] = d.[Epoch])
            OR (d.[State] = 0 AND i.[State] = 2 AND i.[Epoch] = d.[Epoch])
        )
    )
    BEGIN
        THROW 50002, N''illegal run transition'', 1;
    END;
END;');

ALTER TABLE [dbo].[Runs] DROP CONSTRAINT [CK_Runs_HeadIsQueued];
ALTER TABLE [dbo].[Runs] DROP CONSTRAINT [DF_Runs_SubjectHead];
ALTER TABLE [dbo].[Runs] DROP COLUMN [SubjectHead], [RequestHash];

EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = NULL;

COMMIT TRANSACTION;
