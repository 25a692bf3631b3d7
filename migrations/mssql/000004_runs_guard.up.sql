-- migration: breaking
-- the guard trigger refuses run transitions and identity changes that a binary before it was free to write.
-- Refuses every run transition DESIGN.md section 4 does not list, any change of a run's
-- identity, and any change of Epoch other than the claim's +1. Mirror of the SQLite
-- trigger, with the same messages and one error number each, for MapError:
--   50001  run identity is immutable
--   50002  illegal run transition
-- Allowed (old State -> new State, Epoch): 0 -> 1 with Epoch + 1; 1 -> 0, 1 -> 1, 1 -> 2 and
-- 0 -> 2 with the same Epoch. Everything else is refused, as on SQLite, including an
-- update that leaves a queued run queued (0 -> 0) or touches an ended run (2 -> 2).
--
-- AFTER UPDATE and set-based: inserted and deleted hold every row of the statement and are
-- joined on RunId. Any UPDATE that names RunId is refused outright, since a changed RunId
-- could not be matched to its old row. String identity columns are also compared by
-- DATALENGTH, because = ignores trailing spaces even under a BIN2 collation.
-- A trigger runs with XACT_ABORT ON, so THROW here rolls back the caller's whole
-- transaction and ends its batch: the store must treat 50001 and 50002 as the end of the
-- transaction, not as a statement error it can continue after.
-- Msg 334: while this trigger exists, an UPDATE or MERGE on dbo.Runs with an OUTPUT clause
-- must use OUTPUT ... INTO @t (rowversion columns as binary(8)), then SELECT from @t.
-- OUTPUT shows the values before this trigger ran (it changes nothing, so they are final).
-- CREATE TRIGGER must be the first statement of its batch (Msg 111): it is alone here.
CREATE TRIGGER [dbo].[TR_Runs_Guard]
ON [dbo].[Runs]
AFTER UPDATE
AS
BEGIN
    SET NOCOUNT ON;

    IF NOT EXISTS (SELECT 1 FROM inserted)
        RETURN;

    IF UPDATE([RunId])
    BEGIN
        THROW 50001, N'run identity is immutable', 1;
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
            THROW 50001, N'run identity is immutable', 1;
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
        THROW 50002, N'illegal run transition', 1;
    END;
END;
