-- SQL Server restores its bypass without the role here; SQLite has none (see the up).
SELECT 1;
