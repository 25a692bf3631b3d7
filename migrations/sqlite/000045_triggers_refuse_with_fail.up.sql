-- migration: additive
-- The four AFTER triggers of Runs and ExecutionAttempts (000038, 000040) refuse with
-- RAISE(FAIL) instead of RAISE(ABORT): the same rows are refused with the same messages.
--
-- Why: SQLite gives a statement a statement journal when it can abort after changing rows
-- (a trigger that may RAISE(ABORT), a NOT NULL or UNIQUE check under ABORT), and the
-- journal copies every page the statement first changes. The cycle's five writes that
-- fire these triggers copied 41 pages a cycle. With RAISE(FAIL) here, and the claim's lease
-- and the complete's two ends written as UPDATE OR FAIL (internal/runs, internal/attempts),
-- three of them need no journal: 18k instructions of the cycle's 1,002k
-- (docs/perf/issue-35.md). The two inserts keep theirs: their foreign keys are checked at
-- the statement's end, which may abort.
--
-- What FAIL gives up, and where it is taken back: FAIL keeps what the statement wrote before
-- the refusal (the row, in an AFTER trigger). A refusal here is never an outcome a store
-- goes on from: the write that meets one fails, and internal/sqldb makes it fail even if its
-- function swallowed the error (a trigger's refusal, SQLITE_CONSTRAINT_TRIGGER, poisons the
-- transaction's write); the group's rerun, the write's savepoint or the transaction's
-- rollback then undoes everything the write did. No statement outside a write transaction
-- changes these tables. SQL Server's triggers are its own (000045 there changes nothing).
-- Additive: an older binary's writes meet the same refusals, and fail as they did.

DROP TRIGGER TR_Runs_Inserted;
CREATE TRIGGER TR_Runs_Inserted AFTER INSERT ON Runs
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(FAIL, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;

DROP TRIGGER TR_Runs_Updated;
CREATE TRIGGER TR_Runs_Updated AFTER UPDATE ON Runs
BEGIN
    SELECT RAISE(FAIL, 'run identity is immutable')
    WHERE NEW.RunId IS NOT OLD.RunId OR NEW.TenantId IS NOT OLD.TenantId
       OR NEW.Subject IS NOT OLD.Subject OR NEW.ProjectId IS NOT OLD.ProjectId
       OR NEW.Kind IS NOT OLD.Kind OR NEW.IdempotencyKey IS NOT OLD.IdempotencyKey
       OR NEW.ParentRunId IS NOT OLD.ParentRunId OR NEW.ContinuedFromRunId IS NOT OLD.ContinuedFromRunId
       OR NEW.RequestHash IS NOT OLD.RequestHash;
    SELECT RAISE(FAIL, 'illegal run transition')
    WHERE NOT (
           (OLD.State = 0 AND NEW.State = 1 AND NEW.Epoch = OLD.Epoch + 1)
        OR (OLD.State = 1 AND (NEW.State = 0 OR NEW.State = 1 OR NEW.State = 2) AND NEW.Epoch = OLD.Epoch)
        OR (OLD.State = 0 AND NEW.State = 2 AND NEW.Epoch = OLD.Epoch)
        OR (OLD.State = 0 AND NEW.State = 0 AND NEW.Epoch = OLD.Epoch AND NEW.SubjectHead IS NOT OLD.SubjectHead
            AND NEW.EnvironmentId IS OLD.EnvironmentId AND NEW.AgentId IS OLD.AgentId AND NEW.StepId IS OLD.StepId
            AND NEW.SnapshotId IS OLD.SnapshotId AND NEW.Input IS OLD.Input AND NEW.Band IS OLD.Band
            AND NEW.HolderId IS OLD.HolderId AND NEW.LeaseSeconds IS OLD.LeaseSeconds
            AND NEW.LeasedUntil IS OLD.LeasedUntil AND NEW.Attempt IS OLD.Attempt
            AND NEW.MaxAttempts IS OLD.MaxAttempts AND NEW.MaxCorrections IS OLD.MaxCorrections
            AND NEW.QueuedAt IS OLD.QueuedAt AND NEW.DueAt IS OLD.DueAt AND NEW.DeadlineAt IS OLD.DeadlineAt
            AND NEW.EndedAt IS OLD.EndedAt AND NEW.Outcome IS OLD.Outcome AND NEW.ErrorCode IS OLD.ErrorCode
            AND NEW.ErrorMessage IS OLD.ErrorMessage AND NEW.CancelRequestedAt IS OLD.CancelRequestedAt
            AND NEW.Depth IS OLD.Depth AND NEW.CreatedBy IS OLD.CreatedBy)
        OR (OLD.State = 0 AND NEW.State = 0 AND NEW.Epoch = OLD.Epoch AND NEW.DueAt < OLD.DueAt
            AND NEW.SubjectHead IS OLD.SubjectHead
            AND NEW.EnvironmentId IS OLD.EnvironmentId AND NEW.AgentId IS OLD.AgentId AND NEW.StepId IS OLD.StepId
            AND NEW.SnapshotId IS OLD.SnapshotId AND NEW.Input IS OLD.Input AND NEW.Band IS OLD.Band
            AND NEW.HolderId IS OLD.HolderId AND NEW.LeaseSeconds IS OLD.LeaseSeconds
            AND NEW.LeasedUntil IS OLD.LeasedUntil AND NEW.Attempt IS OLD.Attempt
            AND NEW.MaxAttempts IS OLD.MaxAttempts AND NEW.MaxCorrections IS OLD.MaxCorrections
            AND NEW.QueuedAt IS OLD.QueuedAt AND NEW.DeadlineAt IS OLD.DeadlineAt
            AND NEW.EndedAt IS OLD.EndedAt AND NEW.Outcome IS OLD.Outcome AND NEW.ErrorCode IS OLD.ErrorCode
            AND NEW.ErrorMessage IS OLD.ErrorMessage AND NEW.CancelRequestedAt IS OLD.CancelRequestedAt
            AND NEW.Depth IS OLD.Depth AND NEW.CreatedBy IS OLD.CreatedBy)
    );
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version <= OLD.Version OR NEW.Version < Value
        THEN RAISE(FAIL, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND (Value IS NOT NEW.Version OR NEW.Version <= OLD.Version);
END;

DROP TRIGGER TR_ExecutionAttempts_Inserted;
CREATE TRIGGER TR_ExecutionAttempts_Inserted AFTER INSERT ON ExecutionAttempts
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(FAIL, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;

DROP TRIGGER TR_ExecutionAttempts_Updated;
CREATE TRIGGER TR_ExecutionAttempts_Updated AFTER UPDATE ON ExecutionAttempts
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version <= OLD.Version OR NEW.Version < Value
        THEN RAISE(FAIL, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND (Value IS NOT NEW.Version OR NEW.Version <= OLD.Version);
END;
