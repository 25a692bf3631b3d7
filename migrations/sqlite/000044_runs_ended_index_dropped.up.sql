-- migration: additive
-- IX_Runs_Tenant_Ended (migration 18) was the insights' seek of a window's ended runs. The
-- insights read the roll-ups instead since migration 26, and every binary numbered as this
-- one is reads them there: the index's only reader left is the tests' reference store
-- (internal/insights, the direct statements), so dropping it is additive. Every run's end
-- wrote an entry to it, about 18k instructions of the cycle's 1,040k
-- (docs/perf/issue-35.md). The runs list's ended-time filter never sought it (its bounds
-- are optional, `?15 IS NULL OR EndedAt >= ?15`), nor does the retention purge.
DROP INDEX IF EXISTS IX_Runs_Tenant_Ended;
