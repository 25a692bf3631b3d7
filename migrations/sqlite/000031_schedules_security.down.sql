-- SQL Server adds the schedules to its row-level security policy here; SQLite has none.
SELECT 1;
