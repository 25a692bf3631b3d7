-- migration: additive
-- The W3C traceparent an enqueue carried (see migrations/sqlite 000025): a nullable column
-- without a default, a metadata change that rewrites no row. Only stored and read back,
-- never compared: no collation needed.
ALTER TABLE [dbo].[Runs] ADD [TraceParent] nvarchar(55) NULL;
