-- migration: additive
-- SQL Server creates its row-level security predicate function here. SQLite has no
-- row-level security: every query filters on TenantId, which the conformance suite checks.
SELECT 1;
