-- migration: additive
-- CallRecords gets the triggers 000038 gave Runs and ExecutionAttempts: one AFTER INSERT and
-- one AFTER UPDATE trigger that each check the row's stamp and advance RowVersionCounter in
-- one UPDATE, instead of a BEFORE trigger that checks (reading the counter in a subquery of
-- its own, and making SQLite load the old row, then seek and reload it after the trigger)
-- and an AFTER trigger that advances. The same refusals (000038 says why). A call is
-- recorded and finished by every model or tool call of an attempt: priced by callgrind on
-- BenchmarkCallRecord (docs/perf/issue-35.md). SQL Server: nothing changes (migrations/mssql
-- 000041). Additive: no statement names a trigger.
DROP TRIGGER TR_CallRecords_VersionInsert;
DROP TRIGGER TR_CallRecords_VersionUpdate;
DROP TRIGGER TR_CallRecords_VersionAdvanceInsert;
DROP TRIGGER TR_CallRecords_VersionAdvanceUpdate;

CREATE TRIGGER TR_CallRecords_Inserted AFTER INSERT ON CallRecords
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;

CREATE TRIGGER TR_CallRecords_Updated AFTER UPDATE ON CallRecords
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version <= OLD.Version OR NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND (Value IS NOT NEW.Version OR NEW.Version <= OLD.Version);
END;
