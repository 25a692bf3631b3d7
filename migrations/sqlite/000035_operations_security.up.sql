-- migration: additive
-- SQL Server adds the operations to its row-level security policy here; SQLite has none.
SELECT 1;
