-- migration: additive
-- IX_Runs_Tenant_Ended (migration 18) was the insights' seek of a window's ended runs; they
-- read the roll-ups since migration 26, and no statement of a binary numbered as this one
-- reads it outside the tests' reference store (migrations/sqlite 000044 says more). Every
-- run's end wrote its entry: dropping it takes that write off the complete.
--
-- Reading check: one statement, its own autocommit transaction. The existence check on
-- sys.indexes makes a second run after `migrate force 43`, or an index dropped by hand
-- first, a no-op instead of error 3701. DROP INDEX takes a schema-modification lock on
-- dbo.Runs for the metadata change: a short wait for the writes in flight. An index over 128
-- extents has its pages deallocated after the commit, in short background transactions.
IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Runs') AND name = N'IX_Runs_Tenant_Ended')
    DROP INDEX [IX_Runs_Tenant_Ended] ON [dbo].[Runs];
