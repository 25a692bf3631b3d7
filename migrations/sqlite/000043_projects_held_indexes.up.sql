-- migration: additive
-- The claim's eligibility (internal/runs sqliteEligible) probes each head's project for
-- being active and within its daily cost budget. A tenant none of whose projects is
-- inactive or budgeted needs no such probe: two empty seeks of these indexes, once per band
-- seek the claim reaches, say so, and the probe per head is skipped (docs/perf/issue-35.md). Two indexes rather
-- than one filtered by an OR, which SQL Server's filtered indexes cannot say: the dialects
-- keep one schema. Both index few rows: projects are few, and these fewer.
CREATE INDEX IF NOT EXISTS IX_Projects_Inactive ON Projects (TenantId) WHERE Active = 0;
CREATE INDEX IF NOT EXISTS IX_Projects_Budgeted ON Projects (TenantId) WHERE DailyCostBudgetMicros IS NOT NULL;
