-- migration: additive
-- Rolling deploys (DESIGN.md section 8): the kind each applied migration declared on its
-- first line, so a binary older than the schema can tell without the newer files whether
-- it may serve it (every newer migration additive) or not (one breaking, named). Written
-- by `ledger migrate up` and `serve --migrate` after they migrate (sqldb.RecordKinds), one
-- row per version; not a tenant table (like dbo.schema_migrations): no TenantId, no
-- row-level security. The service's login reads it; the migration login writes it.
--
-- Reading check: one CREATE TABLE, so no explicit transaction; Version is the key every
-- read seeks (WHERE Version > @p1 AND Version <= @p2, a handful of rows); Kind is compared
-- with literals only, BIN2 like every code column.
CREATE TABLE [dbo].[SchemaMigrationKinds] (
    [Version] bigint NOT NULL,
    [Kind] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Title] nvarchar(200) NOT NULL,
    [Reason] nvarchar(1000) NULL,
    [RecordedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_SchemaMigrationKinds] PRIMARY KEY CLUSTERED ([Version]),
    CONSTRAINT [CK_SchemaMigrationKinds_Kind] CHECK ([Kind] IN (N'additive', N'breaking'))
);
