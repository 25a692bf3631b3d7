-- migration: breaking
-- the guard trigger refuses run transitions and identity changes that a binary before it was free to write.
-- Refuses every run transition DESIGN.md section 4 does not list, any change of a run's
-- identity, and any change of Epoch other than the claim's +1.
CREATE TRIGGER TR_Runs_Guard BEFORE UPDATE ON Runs
BEGIN
    SELECT RAISE(ABORT, 'run identity is immutable')
    WHERE NEW.RunId IS NOT OLD.RunId OR NEW.TenantId IS NOT OLD.TenantId
       OR NEW.Subject IS NOT OLD.Subject OR NEW.ProjectId IS NOT OLD.ProjectId
       OR NEW.Kind IS NOT OLD.Kind OR NEW.IdempotencyKey IS NOT OLD.IdempotencyKey
       OR NEW.ParentRunId IS NOT OLD.ParentRunId OR NEW.ContinuedFromRunId IS NOT OLD.ContinuedFromRunId;
    SELECT RAISE(ABORT, 'illegal run transition')
    WHERE NOT (
           (OLD.State = 0 AND NEW.State = 1 AND NEW.Epoch = OLD.Epoch + 1)
        OR (OLD.State = 1 AND NEW.State IN (0, 1, 2) AND NEW.Epoch = OLD.Epoch)
        OR (OLD.State = 0 AND NEW.State = 2 AND NEW.Epoch = OLD.Epoch)
    );
END;
