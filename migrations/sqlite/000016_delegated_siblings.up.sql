-- The delegated-siblings hook seeks a parent's child runs of one subject (see the SQL
-- Server migration of the same number).
CREATE INDEX IX_Runs_Parent_Subject ON Runs (TenantId, ParentRunId, Subject);
