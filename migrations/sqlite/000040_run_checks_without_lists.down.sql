PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(replace(replace(sql,
    'CHECK (Band = 0 OR Band = 1 OR Band = 2)', 'CHECK (Band IN (0, 1, 2))'),
    'CHECK (State = 0 OR State = 1 OR State = 2)', 'CHECK (State IN (0, 1, 2))'),
    'CHECK (Outcome = ''succeeded'' OR Outcome = ''failed'' OR Outcome = ''cancelled'' OR Outcome = ''exhausted'' OR Outcome = ''deadline'')',
    'CHECK (Outcome IN (''succeeded'', ''failed'', ''cancelled'', ''exhausted'', ''deadline''))')
WHERE type = 'table' AND name = 'Runs';
PRAGMA writable_schema = RESET;
DROP TRIGGER TR_Runs_Inserted;
CREATE TRIGGER TR_Runs_Inserted AFTER INSERT ON Runs
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;
