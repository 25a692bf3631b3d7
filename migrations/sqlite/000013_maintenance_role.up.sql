-- migration: additive
-- SQL Server makes its row-level security bypass also require membership of the
-- ledger_maintenance database role here. SQLite has no row-level security and no roles:
-- nothing to do, the number keeps the two folders in step.
SELECT 1;
