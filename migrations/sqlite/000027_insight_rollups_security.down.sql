-- SQL Server drops the insights roll-ups from its row-level security policy here; SQLite has none.
SELECT 1;
