-- Reverses 000022.
ALTER TABLE [dbo].[Runs] DROP COLUMN [ForkedFromCheckpointId];
