-- migration: additive
-- Seed 001's six tables with the declared additions of DESIGN.md section 5 (the list and
-- reasons live beside the parity test in internal/schema). Enum ints as in DESIGN.md 7a.
CREATE TABLE ExecutionAttempts (
    AttemptId TEXT NOT NULL,
    RunId TEXT NOT NULL,
    StepId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    ProjectId TEXT NOT NULL,
    EnvironmentId TEXT NULL,
    LeaseId TEXT NOT NULL,
    FencingToken INTEGER NOT NULL,
    SnapshotId TEXT NOT NULL,
    ReleaseId TEXT NOT NULL,
    AgentId TEXT NOT NULL,
    ModelProfileId TEXT NOT NULL,
    State INTEGER NOT NULL,
    Phase INTEGER NOT NULL,
    CorrectionCount INTEGER NOT NULL DEFAULT (0),
    MaxCorrections INTEGER NOT NULL,
    LastCheckpointId TEXT NULL,
    ContextSnapshotRef TEXT NULL,
    OutcomeHash TEXT NULL,
    CancellationObservedAt DATETIME NULL,
    StartedAt DATETIME NOT NULL,
    EndedAt DATETIME NULL,
    Version INTEGER NOT NULL,
    AdapterVersion TEXT NOT NULL,
    CONSTRAINT PK_ExecutionAttempts PRIMARY KEY (AttemptId)
);
CREATE UNIQUE INDEX UX_Attempts_Lease ON ExecutionAttempts (LeaseId);
CREATE INDEX IX_Attempts_Run_Step ON ExecutionAttempts (RunId, StepId);
CREATE INDEX IX_Attempts_Tenant_State ON ExecutionAttempts (TenantId, State);
CREATE INDEX IX_Attempts_Tenant_Started ON ExecutionAttempts (TenantId, StartedAt, AttemptId);
CREATE INDEX IX_Attempts_Tenant_Version ON ExecutionAttempts (TenantId, Version, AttemptId);
CREATE INDEX IX_Attempts_Release ON ExecutionAttempts (ReleaseId, AdapterVersion, State);

CREATE TABLE Checkpoints (
    CheckpointId TEXT NOT NULL,
    AttemptId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    Sequence INTEGER NOT NULL,
    Phase INTEGER NOT NULL,
    AdapterStateRef TEXT NOT NULL,
    AdapterVersion TEXT NOT NULL,
    ContextSnapshotRef TEXT NULL,
    Hash TEXT NOT NULL,
    CreatedAt DATETIME NOT NULL,
    CONSTRAINT PK_Checkpoints PRIMARY KEY (CheckpointId),
    CONSTRAINT FK_Checkpoints_ExecutionAttempts_AttemptId FOREIGN KEY (AttemptId) REFERENCES ExecutionAttempts (AttemptId)
);
CREATE UNIQUE INDEX UX_Checkpoints_Attempt_Sequence ON Checkpoints (AttemptId, Sequence);

CREATE TABLE CallRecords (
    CallId TEXT NOT NULL,
    AttemptId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    Sequence INTEGER NOT NULL,
    Kind INTEGER NOT NULL,
    Target TEXT NOT NULL,
    RequestHash TEXT NOT NULL,
    PolicyDecisionId TEXT NULL,
    ReceiptRef TEXT NULL,
    Status TEXT NOT NULL,
    StartedAt DATETIME NOT NULL,
    EndedAt DATETIME NULL,
    Version INTEGER NOT NULL,
    CONSTRAINT PK_CallRecords PRIMARY KEY (CallId),
    CONSTRAINT FK_CallRecords_ExecutionAttempts_AttemptId FOREIGN KEY (AttemptId) REFERENCES ExecutionAttempts (AttemptId)
);
CREATE UNIQUE INDEX UX_Calls_Attempt_Sequence ON CallRecords (AttemptId, Sequence);

CREATE TABLE DecisionRequests (
    DecisionId TEXT NOT NULL,
    AttemptId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    Kind INTEGER NOT NULL,
    ApprovalId TEXT NULL,
    ProposalHash TEXT NULL,
    OptionsJson TEXT NULL,
    Recommendation TEXT NULL,
    Status TEXT NOT NULL,
    RequestedAt DATETIME NOT NULL,
    AnsweredAt DATETIME NULL,
    Version INTEGER NOT NULL,
    AnswerJson TEXT NULL,
    AnsweredBy TEXT NULL,
    ExpiresAt DATETIME NULL,
    CONSTRAINT PK_DecisionRequests PRIMARY KEY (DecisionId),
    CONSTRAINT FK_DecisionRequests_ExecutionAttempts_AttemptId FOREIGN KEY (AttemptId) REFERENCES ExecutionAttempts (AttemptId)
);
CREATE INDEX IX_Decisions_Tenant_Status ON DecisionRequests (TenantId, Status, RequestedAt, DecisionId);
CREATE INDEX IX_Decisions_Attempt ON DecisionRequests (AttemptId, RequestedAt);
CREATE INDEX IX_Decisions_PendingExpiry ON DecisionRequests (ExpiresAt) WHERE Status = 'pending' AND ExpiresAt IS NOT NULL;

CREATE TABLE SubAgentDelegations (
    DelegationId TEXT NOT NULL,
    AttemptId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    ChildRunId TEXT NOT NULL,
    ChildAgentId TEXT NOT NULL,
    Purpose TEXT NOT NULL,
    Depth INTEGER NOT NULL,
    Status TEXT NOT NULL,
    Version INTEGER NOT NULL,
    CreatedAt DATETIME NOT NULL,
    CONSTRAINT PK_SubAgentDelegations PRIMARY KEY (DelegationId),
    CONSTRAINT FK_SubAgentDelegations_ExecutionAttempts_AttemptId FOREIGN KEY (AttemptId) REFERENCES ExecutionAttempts (AttemptId)
);
CREATE UNIQUE INDEX UX_Delegations_ChildRun ON SubAgentDelegations (ChildRunId);
CREATE INDEX IX_Delegations_Attempt ON SubAgentDelegations (AttemptId, CreatedAt);

CREATE TABLE LoadedReleases (
    ReleaseId TEXT NOT NULL,
    AdapterVersion TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    ManifestHash TEXT NOT NULL,
    ContentRefsJson TEXT NOT NULL,
    State INTEGER NOT NULL,
    VerifiedAt DATETIME NOT NULL,
    InFlightPolicy TEXT NULL,
    Version INTEGER NOT NULL,
    CONSTRAINT PK_LoadedReleases PRIMARY KEY (ReleaseId, AdapterVersion)
);

CREATE TRIGGER TR_ExecutionAttempts_VersionInsert BEFORE INSERT ON ExecutionAttempts
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_ExecutionAttempts_VersionUpdate BEFORE UPDATE ON ExecutionAttempts
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_ExecutionAttempts_VersionAdvanceInsert AFTER INSERT ON ExecutionAttempts
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_ExecutionAttempts_VersionAdvanceUpdate AFTER UPDATE ON ExecutionAttempts
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_CallRecords_VersionInsert BEFORE INSERT ON CallRecords
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_CallRecords_VersionUpdate BEFORE UPDATE ON CallRecords
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_CallRecords_VersionAdvanceInsert AFTER INSERT ON CallRecords
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_CallRecords_VersionAdvanceUpdate AFTER UPDATE ON CallRecords
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_DecisionRequests_VersionInsert BEFORE INSERT ON DecisionRequests
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_DecisionRequests_VersionUpdate BEFORE UPDATE ON DecisionRequests
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_DecisionRequests_VersionAdvanceInsert AFTER INSERT ON DecisionRequests
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_DecisionRequests_VersionAdvanceUpdate AFTER UPDATE ON DecisionRequests
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_SubAgentDelegations_VersionInsert BEFORE INSERT ON SubAgentDelegations
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_SubAgentDelegations_VersionUpdate BEFORE UPDATE ON SubAgentDelegations
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_SubAgentDelegations_VersionAdvanceInsert AFTER INSERT ON SubAgentDelegations
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_SubAgentDelegations_VersionAdvanceUpdate AFTER UPDATE ON SubAgentDelegations
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_LoadedReleases_VersionInsert BEFORE INSERT ON LoadedReleases
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_LoadedReleases_VersionUpdate BEFORE UPDATE ON LoadedReleases
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_LoadedReleases_VersionAdvanceInsert AFTER INSERT ON LoadedReleases
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_LoadedReleases_VersionAdvanceUpdate AFTER UPDATE ON LoadedReleases
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
