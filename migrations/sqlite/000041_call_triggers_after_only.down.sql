DROP TRIGGER TR_CallRecords_Inserted;
DROP TRIGGER TR_CallRecords_Updated;

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
