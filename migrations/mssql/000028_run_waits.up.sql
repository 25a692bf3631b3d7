-- migration: additive
-- Decisions belong to the run, and a run can park (issue 28, DESIGN.md section 5b):
--   - RunWaits: the open conditions of a parked run, one row per decision or child run it
--     waits on (TargetKind 0 decision, 1 child run). A row is deleted in the transaction that
--     closes its condition; the run is due again when its last row goes. Keyed by the run
--     (its conditions) and sought by the target (who waits on this decision or child). No
--     foreign key to Runs: retention deletes ended runs without knowing this table, and a
--     row left by a run that woke by its dueAt before its conditions closed is harmless
--     (the wake-up only moves a queued run that has no other row).
--   - DecisionRequests.RunId, IdempotencyKey, RequestHash (declared additions): a decision
--     asked again with the same key under any attempt of the run is the same decision.
--     RunId is NULL on rows written before this version (their run is their attempt's).
-- The indexes on the new columns are in 000029 (a batch must not use a column it adds).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[RunWaits] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [RunId] uniqueidentifier NOT NULL,
    [TargetKind] int NOT NULL,
    [TargetId] uniqueidentifier NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_RunWaits] PRIMARY KEY CLUSTERED ([TenantId], [RunId], [TargetKind], [TargetId]),
    CONSTRAINT [CK_RunWaits_TargetKind] CHECK ([TargetKind] IN (0, 1))
);
CREATE INDEX [IX_RunWaits_Target] ON [dbo].[RunWaits] ([TenantId], [TargetKind], [TargetId]);

ALTER TABLE [dbo].[DecisionRequests] ADD [RunId] uniqueidentifier NULL,
    [IdempotencyKey] nvarchar(256) COLLATE Latin1_General_100_BIN2 NULL,
    [RequestHash] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL;

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[RunWaits],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[RunWaits] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[RunWaits] AFTER UPDATE;');

COMMIT TRANSACTION;
