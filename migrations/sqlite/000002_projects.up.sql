-- migration: additive
CREATE TABLE Projects (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    ProjectId TEXT NOT NULL,
    Active INTEGER NOT NULL DEFAULT 1 CHECK (Active IN (0, 1)),
    RetentionDays INTEGER NOT NULL DEFAULT 365 CHECK (RetentionDays > 0),
    LeasedCount INTEGER NOT NULL DEFAULT 0 CHECK (LeasedCount >= 0),
    CreatedAt DATETIME NOT NULL,
    UpdatedAt DATETIME NOT NULL,
    Version INTEGER NOT NULL,
    PRIMARY KEY (TenantId, ProjectId)
);

-- Rowversion emulation (see 000001). Rows stamped by one statement share a Version (the
-- counter advances once per statement), so readers page on (Version, key), never Version alone.
CREATE TRIGGER TR_Projects_VersionInsert BEFORE INSERT ON Projects
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Projects_VersionUpdate BEFORE UPDATE ON Projects
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_Projects_VersionAdvanceInsert AFTER INSERT ON Projects
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_Projects_VersionAdvanceUpdate AFTER UPDATE ON Projects
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
