DROP TABLE SchemaMigrationKinds;
