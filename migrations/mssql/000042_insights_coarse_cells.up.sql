-- migration: additive
-- The insights projector's coarse cells (see migrations/sqlite 000042): CoarseThrough is the
-- Position through which they are complete; an older binary never reads it. One statement
-- (a nullable column: metadata only, no rewrite of the table).
ALTER TABLE [dbo].[FeedProjectors] ADD [CoarseThrough] binary(8) NULL;
