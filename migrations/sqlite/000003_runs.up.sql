-- migration: additive
-- The run-lease core (DESIGN.md section 4). State: 0 queued, 1 leased, 2 ended.
-- Band: 0 interactive, 1 batch, 2 background. Outcome holds the wire string.
CREATE TABLE Runs (
    RunId TEXT NOT NULL PRIMARY KEY,
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    ProjectId TEXT NOT NULL,
    EnvironmentId TEXT NULL,
    Subject TEXT NOT NULL,
    Kind TEXT NOT NULL,
    AgentId TEXT NOT NULL,
    StepId TEXT NOT NULL,
    SnapshotId TEXT NOT NULL,
    Input TEXT NULL,
    Band INTEGER NOT NULL CHECK (Band IN (0, 1, 2)),
    State INTEGER NOT NULL CHECK (State IN (0, 1, 2)),
    Epoch INTEGER NOT NULL CHECK (Epoch >= 0),
    HolderId TEXT NULL,
    LeaseSeconds INTEGER NULL,
    LeasedUntil DATETIME NULL,
    Attempt INTEGER NOT NULL CHECK (Attempt >= 0),
    MaxAttempts INTEGER NOT NULL CHECK (MaxAttempts >= 1),
    MaxCorrections INTEGER NOT NULL CHECK (MaxCorrections >= 0),
    QueuedAt DATETIME NOT NULL,
    DueAt DATETIME NOT NULL,
    DeadlineAt DATETIME NULL,
    EndedAt DATETIME NULL,
    Outcome TEXT NULL CHECK (Outcome IN ('succeeded', 'failed', 'cancelled', 'exhausted', 'deadline')),
    ErrorCode TEXT NULL,
    ErrorMessage TEXT NULL,
    CancelRequestedAt DATETIME NULL,
    IdempotencyKey TEXT NULL,
    ParentRunId TEXT NULL REFERENCES Runs (RunId),
    Depth INTEGER NOT NULL CHECK (Depth >= 0),
    ContinuedFromRunId TEXT NULL REFERENCES Runs (RunId),
    CreatedBy TEXT NOT NULL,
    Version INTEGER NOT NULL,
    FOREIGN KEY (TenantId, ProjectId) REFERENCES Projects (TenantId, ProjectId),
    CHECK (State <> 1 OR (LeasedUntil IS NOT NULL AND HolderId IS NOT NULL)),
    CHECK ((State = 2) = (EndedAt IS NOT NULL AND Outcome IS NOT NULL))
);
-- At most one leased run per subject.
CREATE UNIQUE INDEX UX_Runs_LeasedSubject ON Runs (TenantId, Subject) WHERE State = 1;
-- The claim seeks queued runs of a tenant by band and due time.
CREATE INDEX IX_Runs_Claim ON Runs (TenantId, Band, DueAt, RunId) WHERE State = 0;
-- Queue order within a subject: the head is the oldest queued run.
CREATE INDEX IX_Runs_SubjectQueue ON Runs (TenantId, Subject, QueuedAt, RunId) WHERE State = 0;
CREATE UNIQUE INDEX UX_Runs_Idempotency ON Runs (TenantId, IdempotencyKey) WHERE IdempotencyKey IS NOT NULL;
CREATE UNIQUE INDEX UX_Runs_ContinuedFrom ON Runs (ContinuedFromRunId) WHERE ContinuedFromRunId IS NOT NULL;
-- The reaper finds expired leases and overdue queued runs across tenants.
CREATE INDEX IX_Runs_LeaseExpiry ON Runs (LeasedUntil) WHERE State = 1;
CREATE INDEX IX_Runs_QueuedDeadline ON Runs (DeadlineAt) WHERE State = 0 AND DeadlineAt IS NOT NULL;
-- History listing, newest first.
CREATE INDEX IX_Runs_Tenant_Queued ON Runs (TenantId, QueuedAt, RunId);
CREATE INDEX IX_Runs_Parent ON Runs (ParentRunId) WHERE ParentRunId IS NOT NULL;

CREATE TRIGGER TR_Runs_VersionInsert BEFORE INSERT ON Runs
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Runs_VersionUpdate BEFORE UPDATE ON Runs
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Runs_VersionAdvanceInsert AFTER INSERT ON Runs
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_Runs_VersionAdvanceUpdate AFTER UPDATE ON Runs
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
