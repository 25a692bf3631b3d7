-- migration: additive
-- SQLite has no row-level security: this migration keeps the numbers in step with
-- migrations/mssql 000033, which adds the webhook tables to the tenant policy.
SELECT 1;
