-- migration: additive
-- The delegated-siblings hook (internal/delegations, delegatedSiblings) finds the
-- delegations of a continuation's chain: the parent's child runs of one subject. Through
-- IX_Runs_Parent the subject was a residual after a PK_Runs lookup of every child run of
-- the parent, and without READ_COMMITTED_SNAPSHOT each lookup took a short S lock: a claim
-- of one delegated continuation waited on a sibling of another subject that a complete
-- held X, and the two could deadlock (1205, retried). This index seeks the chain's keys
-- only (RunId, the clustered key, rides along), so the hook touches no other child run.
--
-- Reading check: CREATE INDEX takes a schema modification lock on dbo.Runs for the build;
-- run it in a deploy window, or create the index first by hand with the same name and
-- definition (Enterprise edition: WITH (ONLINE = ON)). The build is guarded by an
-- existence check on sys.indexes, so an index made by hand, or a second run after
-- `migrate force 15`, is not a 1913 that leaves version 16 dirty. Any other error leaves
-- version 16 dirty with nothing changed (one statement): force 15 and run up again.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Runs') AND name = N'IX_Runs_Parent_Subject')
    CREATE INDEX [IX_Runs_Parent_Subject] ON [dbo].[Runs] ([TenantId], [ParentRunId], [Subject]);
