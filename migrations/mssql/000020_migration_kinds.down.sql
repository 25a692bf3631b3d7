DROP TABLE [dbo].[SchemaMigrationKinds];
