-- migration: additive
-- Forks (see migrations/mssql 000022).
ALTER TABLE Runs ADD ForkedFromCheckpointId TEXT NULL;
