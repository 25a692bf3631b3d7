-- migration: additive
-- Why a run failed, and tags to find it by (DESIGN.md section 5b; issue 29). Nullable
-- columns only: an older binary neither reads nor writes them. Declared additions
-- (internal/schema/declared_additions.go), with their reasons there:
--   ExecutionAttempts.ErrorCode, ErrorMessage, ErrorDetails: the error a complete or a
--     release reported (or the reaper's lease_lost); the run's seed ErrorCode and
--     ErrorMessage take a copy when the attempt ends.
--   Runs.Tags (a JSON array of at most 16 identifiers) and Runs.Metadata (JSON of at most
--     4 KiB), given at enqueue and copied to a continuation.
SET XACT_ABORT ON;
BEGIN TRANSACTION;
ALTER TABLE [dbo].[ExecutionAttempts] ADD [ErrorCode] nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE [dbo].[ExecutionAttempts] ADD [ErrorMessage] nvarchar(2000) NULL;
ALTER TABLE [dbo].[ExecutionAttempts] ADD [ErrorDetails] nvarchar(max) NULL;
ALTER TABLE [dbo].[Runs] ADD [Tags] nvarchar(max) NULL;
ALTER TABLE [dbo].[Runs] ADD [Metadata] nvarchar(max) NULL;
COMMIT TRANSACTION;
