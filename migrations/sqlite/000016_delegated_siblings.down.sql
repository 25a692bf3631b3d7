DROP INDEX IF EXISTS IX_Runs_Parent_Subject;
