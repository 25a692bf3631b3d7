package overview

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the overview counts. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. Reads only; each counts a tenant's
// (or, in maintenance scope, every tenant's) queue, so each but budget carries
// OPTION (MAXDOP 1). Attempt state 4 is lost; the State and Status literals match the
// filtered indexes. 0 rows reads as zero.

var mssqlQueries = queries{
	// queued: IX_Runs_SubjectQueue seek on TenantId (its INCLUDE covers ProjectId, Band,
	// DueAt): the tenant's queue, no lookups.
	queued: `SELECT ProjectId, Band, COUNT_BIG(*) AS Runs, MIN(CASE WHEN DueAt <= @p2 THEN DueAt END) AS OldestDue
FROM dbo.Runs WHERE TenantId = @p1 AND State = 0 GROUP BY ProjectId, Band
OPTION (MAXDOP 1);`,
	// leased: UX_Runs_LeasedSubject seek, a lookup per leased run: bounded by the budget.
	leased: `SELECT ProjectId, Band, COUNT_BIG(*) AS Runs FROM dbo.Runs
WHERE TenantId = @p1 AND State = 1 GROUP BY ProjectId, Band
OPTION (MAXDOP 1);`,
	// lost: IX_Attempts_Tenant_State seek on (TenantId, 4), a lookup per lost attempt kept by
	// retention (an index with EndedAt would bound it to the hour).
	lost: `SELECT ProjectId, COUNT_BIG(*) AS Runs FROM dbo.ExecutionAttempts
WHERE TenantId = @p1 AND State = 4 AND EndedAt >= @p2 GROUP BY ProjectId
OPTION (MAXDOP 1);`,
	// pending: IX_Decisions_Tenant_Status seek on (TenantId, N'pending'), the attempt per row.
	pending: `SELECT a.ProjectId, COUNT_BIG(*) AS Runs FROM dbo.DecisionRequests d
JOIN dbo.ExecutionAttempts a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
WHERE d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p2)
GROUP BY a.ProjectId
OPTION (MAXDOP 1);`,
	// budget: PK_Tenants seek. 0 rows: no tenant.
	budget: `SELECT MaxLeasedRuns FROM dbo.Tenants WHERE TenantId = @p1;`,
	// waiting: PK_RunWaits range of the tenant (parked runs' open conditions only), then
	// each run by PK_Runs; one past its dueAt is due, so queued, not waiting (residual
	// predicate on the looked-up row).
	waiting: `SELECT r.ProjectId, r.Band, COUNT_BIG(*) AS Runs FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT w.RunId FROM dbo.RunWaits AS w WHERE w.TenantId = @p1) AND r.TenantId = @p1 AND r.State = 0
    AND r.DueAt > @p2
GROUP BY r.ProjectId, r.Band
OPTION (MAXDOP 1);`,

	// allQueued, allLeased (metrics): scans of the filtered indexes, queued or leased runs only.
	// allWaiting (metrics): a scan of RunWaits (open conditions only), each run by PK_Runs.
	allWaiting: `SELECT r.TenantId, r.Band, COUNT_BIG(*) AS Runs FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT w.RunId FROM dbo.RunWaits AS w) AND r.State = 0 AND r.DueAt > @p1
GROUP BY r.TenantId, r.Band
OPTION (MAXDOP 1);`,
	allQueued: `SELECT TenantId, Band, COUNT_BIG(*) AS Runs, MIN(CASE WHEN DueAt <= @p1 THEN DueAt END) AS OldestDue
FROM dbo.Runs WHERE State = 0 GROUP BY TenantId, Band OPTION (MAXDOP 1);`,
	allLeased: `SELECT TenantId, Band, COUNT_BIG(*) AS Runs FROM dbo.Runs
WHERE State = 1 GROUP BY TenantId, Band OPTION (MAXDOP 1);`,
	// allPending: per tenant one IX_Decisions_Tenant_Status seek, never the closed decisions.
	allPending: `SELECT t.TenantId, x.Runs FROM dbo.Tenants t
CROSS APPLY (SELECT COUNT_BIG(*) AS Runs FROM dbo.DecisionRequests d
    WHERE d.TenantId = t.TenantId AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p1)) x
OPTION (MAXDOP 1);`,
}
