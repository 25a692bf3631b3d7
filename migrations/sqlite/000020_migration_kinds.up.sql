-- migration: additive
-- Rolling deploys (DESIGN.md section 8): the kind each applied migration declared on its
-- first line, so a binary older than the schema can tell whether it may serve it (see the
-- SQL Server migration of the same number). Not a tenant table, like schema_migrations.
CREATE TABLE SchemaMigrationKinds (
    Version INTEGER NOT NULL,
    Kind TEXT NOT NULL,
    Title TEXT NOT NULL,
    Reason TEXT NULL,
    RecordedAt DATETIME NOT NULL,
    CONSTRAINT PK_SchemaMigrationKinds PRIMARY KEY (Version),
    CONSTRAINT CK_SchemaMigrationKinds_Kind CHECK (Kind IN ('additive', 'breaking'))
);
