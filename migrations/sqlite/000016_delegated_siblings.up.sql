-- migration: additive
-- The delegated-siblings hook seeks a parent's child runs of one subject (see the SQL
-- Server migration of the same number).
-- IF NOT EXISTS: an index made by hand first, or a second run, is not an error (as the
-- SQL Server file's existence check).
CREATE INDEX IF NOT EXISTS IX_Runs_Parent_Subject ON Runs (TenantId, ParentRunId, Subject);
