-- migration: additive
-- The tenant's calls finished in a window (GET /v1/calls?endedFrom=..., which the usage
-- insight's rows link to): a backward range seek of this index a page at a time, where
-- IX_Calls_Tenant_Started cannot bound a call's end. Declared addition
-- (internal/schema/declared_additions.go). The build takes a schema-modification lock on
-- CallRecords while it runs: on a large ledger, run this migration off-peak.
--
-- Reading check: one statement, its own autocommit transaction; the existence check on
-- sys.indexes makes an index made by hand first, or a second run after `migrate force 35`,
-- skip the build instead of failing with 1913 and leaving version 36 dirty. A nonclustered
-- index on a table clustered on CallId carries CallId as its last key, so (TenantId,
-- EndedAt, CallId) is the order the listing's keyset reads.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.CallRecords') AND name = N'IX_Calls_Tenant_Ended')
    CREATE INDEX [IX_Calls_Tenant_Ended] ON [dbo].[CallRecords] ([TenantId], [EndedAt]);
