-- migration: additive
-- What a model call used and cost (DESIGN.md 5b, issue 31; see migrations/sqlite 000023).
-- Nullable columns without defaults: a metadata change that rewrites no row. The model,
-- provider and operation are compared in insights' groups, so they are BIN2 like every
-- identifier; FinishReasons is a JSON array of at most 8 short strings, only stored. No CHECK
-- on the counts: the service refuses a negative one (a seed table takes declared columns only).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE [dbo].[CallRecords] ADD
    [Model] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [Provider] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL,
    [Operation] nvarchar(32) COLLATE Latin1_General_100_BIN2 NULL,
    [ResponseModel] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [FinishReasons] nvarchar(400) NULL,
    [InputTokens] bigint NULL,
    [OutputTokens] bigint NULL,
    [CacheReadInputTokens] bigint NULL,
    [CacheCreationInputTokens] bigint NULL,
    [ReasoningOutputTokens] bigint NULL,
    [CostMicros] bigint NULL;

COMMIT TRANSACTION;
