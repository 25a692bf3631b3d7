-- migration: additive
-- The CHECK constraints of Runs on Band, State and Outcome say the same as before, as
-- equalities joined by OR instead of an IN list. SQLite codes an IN list of three or more
-- constants as a lookup table it builds anew for every statement it checks: each enqueue
-- built three (Band, State, Outcome), each claim one and each end two, every one an in-memory
-- B-tree opened, filled and closed. The equalities are a few comparisons. Priced by
-- callgrind on BenchmarkCycle (docs/perf/issue-35.md): 120k instructions of a serial cycle of
-- 2,360k. Same rows pass and fail: `x IN (a, b, c)` is `x = a OR x = b OR x = c`, NULL
-- included (both NULL, which a CHECK lets through; the columns are NOT NULL but Outcome).
--
-- How: a CHECK constraint lives only in the table's text in sqlite_schema, never in the
-- file's content, so it is rewritten in place by the procedure SQLite documents for changes
-- that do not touch the stored content (https://www.sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"), instead of copying every run into a new
-- table. Each replace() matches its constraint's exact text in 000003 (nothing else in the
-- schema has it). `writable_schema = RESET` turns the flag off and makes this connection read
-- the schema again; the recreated trigger changes the schema cookie, so every other open
-- connection reads the new text before its next statement. The transaction golang-migrate runs this in
-- (internal/sqldb/migrate, atomicSQLite) commits it with the version row or not at all.
-- SQL Server keeps its IN lists (migrations/mssql 000040 changes nothing). Additive: an older
-- binary writes the same values.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(replace(replace(sql,
    'CHECK (Band IN (0, 1, 2))', 'CHECK (Band = 0 OR Band = 1 OR Band = 2)'),
    'CHECK (State IN (0, 1, 2))', 'CHECK (State = 0 OR State = 1 OR State = 2)'),
    'CHECK (Outcome IN (''succeeded'', ''failed'', ''cancelled'', ''exhausted'', ''deadline''))',
    'CHECK (Outcome = ''succeeded'' OR Outcome = ''failed'' OR Outcome = ''cancelled'' OR Outcome = ''exhausted'' OR Outcome = ''deadline'')')
WHERE type = 'table' AND name = 'Runs';
PRAGMA writable_schema = RESET;
DROP TRIGGER TR_Runs_Inserted;
CREATE TRIGGER TR_Runs_Inserted AFTER INSERT ON Runs
BEGIN
    UPDATE RowVersionCounter SET Value = CASE WHEN NEW.Version < Value
        THEN RAISE(ABORT, 'rowversion not stamped') ELSE NEW.Version END
    WHERE Id = 1 AND Value IS NOT NEW.Version;
END;
