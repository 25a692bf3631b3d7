-- migration: additive
-- Why a run failed, and tags to find it by (see migrations/mssql 000021 for the reasons).
ALTER TABLE ExecutionAttempts ADD ErrorCode TEXT NULL;
ALTER TABLE ExecutionAttempts ADD ErrorMessage TEXT NULL;
ALTER TABLE ExecutionAttempts ADD ErrorDetails TEXT NULL;
ALTER TABLE Runs ADD Tags TEXT NULL;
ALTER TABLE Runs ADD Metadata TEXT NULL;
