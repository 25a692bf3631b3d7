DROP INDEX IX_Runs_Parent_Subject;
CREATE INDEX IX_Runs_Parent_Subject ON Runs (TenantId, ParentRunId, Subject);
DROP INDEX IX_Runs_ContinuedFromRunId;
CREATE INDEX IX_Runs_ContinuedFromRunId ON Runs (ContinuedFromRunId);
DROP INDEX IX_Runs_Parent;
CREATE INDEX IX_Runs_Parent ON Runs (ParentRunId);
