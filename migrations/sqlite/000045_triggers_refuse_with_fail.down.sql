-- The four triggers as 000038 and 000040 left them, refusing with RAISE(ABORT).

DROP TRIGGER TR_Runs_Inserted;
CREATE TRIGGER TR_Runs_Inserted AFTER INSERT ON Runs
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;

DROP TRIGGER TR_Runs_Updated;
CREATE TRIGGER TR_Runs_Updated AFTER UPDATE ON Runs
BEGIN
    SELECT RAISE(ABORT, 'run identity is immutable')
    WHERE NEW.RunId IS NOT OLD.RunId OR NEW.TenantId IS NOT OLD.TenantId
       OR NEW.Subject IS NOT OLD.Subject OR NEW.ProjectId IS NOT OLD.ProjectId
       OR NEW.Kind IS NOT OLD.Kind OR NEW.IdempotencyKey IS NOT OLD.IdempotencyKey
       OR NEW.ParentRunId IS NOT OLD.ParentRunId OR NEW.ContinuedFromRunId IS NOT OLD.ContinuedFromRunId
       OR NEW.RequestHash IS NOT OLD.RequestHash;
    SELECT RAISE(ABORT, 'illegal run transition')
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
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND (Value IS NOT NEW.Version OR NEW.Version <= OLD.Version);
END;

DROP TRIGGER TR_ExecutionAttempts_Inserted;
CREATE TRIGGER TR_ExecutionAttempts_Inserted AFTER INSERT ON ExecutionAttempts
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;

DROP TRIGGER TR_ExecutionAttempts_Updated;
CREATE TRIGGER TR_ExecutionAttempts_Updated AFTER UPDATE ON ExecutionAttempts
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version <= OLD.Version OR NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND (Value IS NOT NEW.Version OR NEW.Version <= OLD.Version);
END;
