-- migration: additive
-- Forks (DESIGN.md section 5b; issue 29): a run started from a checkpoint of another run
-- keeps that checkpoint's id, its resume point until it writes a checkpoint of its own. A
-- nullable column (a declared addition, internal/schema/declared_additions.go): an older
-- binary neither reads nor writes it.
ALTER TABLE [dbo].[Runs] ADD [ForkedFromCheckpointId] uniqueidentifier NULL;
