-- migration: additive
-- SQL Server adds the console sessions to its row-level security policy here; SQLite has none.
SELECT 1;
