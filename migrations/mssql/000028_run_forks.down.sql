-- Reverses 000028.
ALTER TABLE [dbo].[Runs] DROP COLUMN [ForkedFromCheckpointId];
