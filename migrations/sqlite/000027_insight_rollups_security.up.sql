-- migration: additive
-- SQL Server adds the insights roll-ups to its row-level security policy here; SQLite has none.
SELECT 1;
