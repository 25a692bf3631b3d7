DROP TABLE [dbo].[IdempotencyTombstones];
