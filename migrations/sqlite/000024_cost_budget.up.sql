-- migration: additive
-- A project's daily cost budget (DESIGN.md 5b "What it cost", issue 31): claims of its runs
-- are held once the cost its calls recorded since 00:00 UTC reaches the budget. The cost is
-- a counter per project and UTC day, added to in the transaction that finishes a call, so
-- a claim reads one counter row and never sums calls. The key leads with the
-- day after the tenant so a claim that found nothing can list the tenant's projects with a
-- cost today (the held ones among them) without reading the others. Day is the UTC date 'YYYY-MM-DD',
-- which compares as text. A nullable column and a new table: an older binary still works.
ALTER TABLE Projects ADD COLUMN DailyCostBudgetMicros INTEGER NULL CHECK (DailyCostBudgetMicros >= 0);
CREATE TABLE ProjectDailyCosts (
    TenantId TEXT NOT NULL,
    ProjectId TEXT NOT NULL,
    Day TEXT NOT NULL,
    CostMicros INTEGER NOT NULL CHECK (CostMicros >= 0),
    PRIMARY KEY (TenantId, Day, ProjectId),
    FOREIGN KEY (TenantId, ProjectId) REFERENCES Projects (TenantId, ProjectId)
) WITHOUT ROWID;
