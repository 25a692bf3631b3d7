ALTER TABLE Runs DROP COLUMN ForkedFromCheckpointId;
