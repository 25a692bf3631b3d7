DROP TABLE ProjectDailyCosts;
ALTER TABLE Projects DROP COLUMN DailyCostBudgetMicros;
