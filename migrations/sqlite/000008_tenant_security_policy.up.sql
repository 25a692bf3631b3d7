-- migration: additive
-- SQL Server creates its row-level security policy here; see 000007.
SELECT 1;
