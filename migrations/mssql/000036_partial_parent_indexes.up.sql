-- migration: additive
-- IX_Runs_Parent_Subject (TenantId, ParentRunId, Subject) indexed every run, though only a
-- delegated child has a ParentRunId: filtered to the non-NULL keys, an enqueue of any other
-- run writes no entry to it. Its one reader, the delegated-siblings hook, says
-- `c.ParentRunId IS NOT NULL` as a literal beside its parameterized equality, so the filter
-- matches without relying on the optimiser to derive it from the parameter.
-- IX_Runs_Parent and IX_Runs_ContinuedFromRunId stay unfiltered (SQLite filters them,
-- migrations/sqlite 000036): they exist for the purge's self-referencing foreign-key checks,
-- and the optimiser may not match a filtered index for a foreign-key check (TSQL.md).
--
-- Reading check: the rebuild takes a schema modification lock on dbo.Runs for its build (a
-- deploy window); one transaction, so a failure leaves the old index, and version 36 dirty:
-- force 35 and run up again. A filtered index needs the session settings of TSQL.md
-- (go-mssqldb's defaults).
SET XACT_ABORT ON;
BEGIN TRAN;
DROP INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs];
CREATE INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs] ([TenantId], [ParentRunId], [Subject])
    WHERE [ParentRunId] IS NOT NULL;
COMMIT;
