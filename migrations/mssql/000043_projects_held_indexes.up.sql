-- migration: additive
-- The tenant's inactive and budgeted projects (see migrations/sqlite 000043, where the
-- claim's eligibility reads them to skip its per-head project probe). SQL Server's claim
-- does not read them yet; they are here so that both dialects declare one schema
-- (internal/schema TestDialectsDeclareSameSchema), and they cost a write only for a
-- project inside their filters (inactive, or with a budget) or moving into or out of them.
--
-- Reading check, both statements: each is its own autocommit transaction, and the existence
-- check on sys.indexes makes an index made by hand first, or a second run after `migrate
-- force 42`, skip the build instead of failing with 1913. A filtered index's predicate is a
-- simple comparison on one column (no OR, which filtered indexes refuse): `Active = 0` on a
-- bit, `DailyCostBudgetMicros IS NOT NULL` on a bigint. DML on a table with a filtered index
-- needs the ANSI SET options the driver's sessions already have (Runs carries filtered
-- indexes since migration 3).
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Projects') AND name = N'IX_Projects_Inactive')
    CREATE INDEX [IX_Projects_Inactive] ON [dbo].[Projects] ([TenantId]) WHERE [Active] = 0;
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.Projects') AND name = N'IX_Projects_Budgeted')
    CREATE INDEX [IX_Projects_Budgeted] ON [dbo].[Projects] ([TenantId]) WHERE [DailyCostBudgetMicros] IS NOT NULL;
