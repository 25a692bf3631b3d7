-- migration: additive
-- ParentRunId and ContinuedFromRunId are NULL in most runs (only delegated children and
-- continuations carry them), so their unfiltered indexes held an entry per run that no read
-- can use: every enqueue wrote three index entries for NULL keys and every change of the
-- run moved none of them but still touched the pages. Partial indexes keep only the
-- non-NULL keys. Every read of them still matches: an equality on the column (including the
-- foreign-key checks of a purge, `ParentRunId = ?`, and the delegated-siblings hook's
-- INDEXED BY) implies IS NOT NULL, which is how SQLite decides a partial index is usable.
-- SQL Server keeps IX_Runs_Parent and IX_Runs_ContinuedFromRunId unfiltered (its foreign-key
-- checks may not match a filtered index) and filters IX_Runs_Parent_Subject only.
-- Additive: an older binary's statements name only IX_Runs_Parent_Subject (INDEXED BY, with
-- an equality on ParentRunId), which the partial index serves.
DROP INDEX IX_Runs_Parent;
CREATE INDEX IX_Runs_Parent ON Runs (ParentRunId) WHERE ParentRunId IS NOT NULL;
DROP INDEX IX_Runs_ContinuedFromRunId;
CREATE INDEX IX_Runs_ContinuedFromRunId ON Runs (ContinuedFromRunId) WHERE ContinuedFromRunId IS NOT NULL;
DROP INDEX IX_Runs_Parent_Subject;
CREATE INDEX IX_Runs_Parent_Subject ON Runs (TenantId, ParentRunId, Subject) WHERE ParentRunId IS NOT NULL;
