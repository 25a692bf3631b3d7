-- migration: breaking
-- drops the Projects lease counters and indexes a binary before it reads, and its triggers need SubjectHead kept, which such a binary does not do.
-- The write path (DESIGN.md section 4; issues 11 and 12), mirrored in migrations/mssql 000011.
--
-- Runs gets two declared additions (internal/schema/declared_additions.go):
--   SubjectHead  1 on the one run of a subject that a claim may take: its oldest queued run
--                (QueuedAt, then RunId) while the subject has no leased run; 0 on every
--                other run. Kept in the transactions that enqueue, claim, requeue, end and
--                cancel runs, so the claim reads one indexed column instead of probing
--                each candidate's siblings. At most one per subject (UX_Runs_SubjectHead);
--                only on a queued run (CHECK).
--   RequestHash  the SHA-256 (hex) of the enqueue request's defining fields, so a reused
--                idempotency key can tell an exact repeat from another request.
ALTER TABLE Runs ADD COLUMN SubjectHead INTEGER NOT NULL DEFAULT 0 CHECK (SubjectHead = 0 OR State = 0);
ALTER TABLE Runs ADD COLUMN RequestHash TEXT NULL;

-- The guard of 000004, with two changes: a queued run may stay queued when only its head
-- marker (and Version) changes, and RequestHash is as immutable as the run's identity.
DROP TRIGGER TR_Runs_Guard;
CREATE TRIGGER TR_Runs_Guard BEFORE UPDATE ON Runs
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
        OR (OLD.State = 1 AND NEW.State IN (0, 1, 2) AND NEW.Epoch = OLD.Epoch)
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
    );
END;

-- Mark the heads of the runs already queued (the definition above, as one statement).
UPDATE Runs SET SubjectHead = 1, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE State = 0
    AND NOT EXISTS (SELECT 1 FROM Runs AS l WHERE l.TenantId = Runs.TenantId AND l.Subject = Runs.Subject AND l.State = 1)
    AND NOT EXISTS (SELECT 1 FROM Runs AS o WHERE o.TenantId = Runs.TenantId AND o.Subject = Runs.Subject AND o.State = 0
        AND (o.QueuedAt < Runs.QueuedAt OR (o.QueuedAt = Runs.QueuedAt AND o.RunId < Runs.RunId)));

-- The claim seeks heads only: one per subject, so its window needs no sibling probes.
DROP INDEX IX_Runs_Claim;
CREATE INDEX IX_Runs_Claim ON Runs (TenantId, Band, DueAt, RunId) WHERE SubjectHead = 1;
-- At most one head per subject; also how a marker change finds the subject's current head.
CREATE UNIQUE INDEX UX_Runs_SubjectHead ON Runs (TenantId, Subject) WHERE SubjectHead = 1;
-- Unfiltered, so a delete's self-referencing foreign-key checks can use them (SQL Server
-- may not match a filtered index there; SQLite has them for parity).
DROP INDEX IX_Runs_Parent;
CREATE INDEX IX_Runs_Parent ON Runs (ParentRunId);
CREATE INDEX IX_Runs_ContinuedFromRunId ON Runs (ContinuedFromRunId);

-- Leased counts, kept in the transactions that lease and unlease runs. They live in their
-- own tables, not on Projects or Tenants: a count on Projects changed the project's
-- rowversion (its ETag) at every claim, so admins' If-Match updates of busy projects
-- failed; and no foreign key refers to these rows, so inserts that check a tenant or a
-- project never wait on a counter being updated. A missing row counts 0 (the claim
-- creates it).
CREATE TABLE TenantLeases (
    TenantId TEXT NOT NULL PRIMARY KEY REFERENCES Tenants (TenantId),
    LeasedCount INTEGER NOT NULL DEFAULT 0 CHECK (LeasedCount >= 0)
);
CREATE TABLE ProjectLeases (
    TenantId TEXT NOT NULL,
    ProjectId TEXT NOT NULL,
    LeasedCount INTEGER NOT NULL DEFAULT 0 CHECK (LeasedCount >= 0),
    PRIMARY KEY (TenantId, ProjectId),
    FOREIGN KEY (TenantId, ProjectId) REFERENCES Projects (TenantId, ProjectId)
);
-- Counted from the runs themselves, the source of truth.
INSERT INTO TenantLeases (TenantId, LeasedCount)
SELECT t.TenantId, (SELECT COUNT(*) FROM Runs AS r WHERE r.TenantId = t.TenantId AND r.State = 1) FROM Tenants AS t;
INSERT INTO ProjectLeases (TenantId, ProjectId, LeasedCount)
SELECT p.TenantId, p.ProjectId,
    (SELECT COUNT(*) FROM Runs AS r WHERE r.TenantId = p.TenantId AND r.ProjectId = p.ProjectId AND r.State = 1)
FROM Projects AS p;
ALTER TABLE Projects DROP COLUMN LeasedCount;
