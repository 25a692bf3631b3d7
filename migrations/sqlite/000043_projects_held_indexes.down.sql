DROP INDEX IF EXISTS IX_Projects_Budgeted;
DROP INDEX IF EXISTS IX_Projects_Inactive;
