-- migration: additive
-- The tenant's calls finished in a window (GET /v1/calls?endedFrom=..., which the usage
-- insight's rows link to): a range of this index read backwards a page at a time, where
-- IX_Calls_Tenant_Started cannot bound a call's end. Declared addition
-- (internal/schema/declared_additions.go). IF NOT EXISTS: an index made by hand first, or
-- a second run, is not an error.
CREATE INDEX IF NOT EXISTS IX_Calls_Tenant_Ended ON CallRecords (TenantId, EndedAt);
