-- migration: additive
-- Schedules (DESIGN.md 5b): the admin's declaration (versioned: the ETag) apart from what the
-- schedulers change at every firing (ScheduleStates), so a firing never moves the ETag.
-- NextFireAt is NULL while paused; the partial index is the schedulers' due scan.
CREATE TABLE Schedules (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    ScheduleId TEXT NOT NULL,
    Cron TEXT NOT NULL,
    Timezone TEXT NOT NULL,
    RunSpec TEXT NOT NULL,
    Overlap TEXT NOT NULL CHECK (Overlap IN ('skip', 'allow')),
    CatchupSeconds INTEGER NOT NULL CHECK (CatchupSeconds >= 0),
    Paused INTEGER NOT NULL CHECK (Paused IN (0, 1)),
    Description TEXT NULL,
    CreatedAt DATETIME NOT NULL,
    UpdatedAt DATETIME NOT NULL,
    UpdatedBy TEXT NOT NULL,
    Version INTEGER NOT NULL,
    PRIMARY KEY (TenantId, ScheduleId)
);

-- Rowversion emulation (see 000001).
CREATE TRIGGER TR_Schedules_VersionInsert BEFORE INSERT ON Schedules
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Schedules_VersionUpdate BEFORE UPDATE ON Schedules
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Schedules_VersionAdvanceInsert AFTER INSERT ON Schedules
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_Schedules_VersionAdvanceUpdate AFTER UPDATE ON Schedules
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;

CREATE TABLE ScheduleStates (
    TenantId TEXT NOT NULL,
    ScheduleId TEXT NOT NULL,
    NextFireAt DATETIME NULL,
    LastFireAt DATETIME NULL,
    LastRunId TEXT NULL,
    Fired INTEGER NOT NULL,
    SkippedOverlap INTEGER NOT NULL,
    SkippedCatchup INTEGER NOT NULL,
    PRIMARY KEY (TenantId, ScheduleId),
    FOREIGN KEY (TenantId, ScheduleId) REFERENCES Schedules (TenantId, ScheduleId)
);

CREATE INDEX IX_ScheduleStates_Due ON ScheduleStates (NextFireAt) WHERE NextFireAt IS NOT NULL;
