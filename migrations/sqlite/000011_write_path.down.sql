-- Reverses 000011: the leased count goes back on Projects, the head marker and request hash
-- leave Runs, and the guard of 000004 returns.
ALTER TABLE Projects ADD COLUMN LeasedCount INTEGER NOT NULL DEFAULT 0 CHECK (LeasedCount >= 0);
UPDATE Projects SET LeasedCount = COALESCE((SELECT l.LeasedCount FROM ProjectLeases AS l
    WHERE l.TenantId = Projects.TenantId AND l.ProjectId = Projects.ProjectId), 0),
    Version = (SELECT Value + 1 FROM RowVersionCounter);
DROP TABLE ProjectLeases;
DROP TABLE TenantLeases;

DROP INDEX IX_Runs_ContinuedFromRunId;
DROP INDEX IX_Runs_Parent;
CREATE INDEX IX_Runs_Parent ON Runs (ParentRunId) WHERE ParentRunId IS NOT NULL;
DROP INDEX UX_Runs_SubjectHead;
DROP INDEX IX_Runs_Claim;
CREATE INDEX IX_Runs_Claim ON Runs (TenantId, Band, DueAt, RunId) WHERE State = 0;

DROP TRIGGER TR_Runs_Guard;
ALTER TABLE Runs DROP COLUMN RequestHash;
ALTER TABLE Runs DROP COLUMN SubjectHead;
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
