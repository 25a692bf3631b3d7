-- migration: additive
-- Forks (see migrations/mssql 000028).
ALTER TABLE Runs ADD ForkedFromCheckpointId TEXT NULL;
