package overview

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// Attempt state 4 is lost, run state 0 queued and 1 leased (DESIGN.md section 7a). The
// literals match the partial indexes' filters, so SQLite uses them.
var sqliteQueries = queries{
	// IX_Runs_SubjectQueue (TenantId, Subject, QueuedAt, RunId) WHERE State = 0: a seek of the
	// tenant's queued runs, a row lookup each for ProjectId, Band and DueAt. Pinned with
	// INDEXED BY: since IX_Runs_Claim holds only the subject heads (migration 000011) the
	// planner otherwise picked IX_Runs_Tenant_Queued, every run of the tenant, history
	// included.
	queued: `SELECT ProjectId, Band, COUNT(*) AS Runs, MIN(CASE WHEN DueAt <= ?2 THEN DueAt END) AS OldestDue
FROM Runs INDEXED BY IX_Runs_SubjectQueue WHERE TenantId = ?1 AND State = 0 GROUP BY ProjectId, Band`,
	// UX_Runs_LeasedSubject (TenantId, Subject) WHERE State = 1: the tenant's leased runs.
	// Pinned as queued is: unpinned, the planner (no statistics) read IX_Runs_Tenant_Queued,
	// every run of the tenant, history included.
	leased: `SELECT ProjectId, Band, COUNT(*) AS Runs FROM Runs INDEXED BY UX_Runs_LeasedSubject
WHERE TenantId = ?1 AND State = 1 GROUP BY ProjectId, Band`,
	// IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt), migration 000018: the
	// tenant's attempts lost in the last hour only, not every lost attempt it keeps.
	lost: `SELECT ProjectId, COUNT(*) AS Runs FROM ExecutionAttempts INDEXED BY IX_Attempts_Tenant_State_Ended
WHERE TenantId = ?1 AND State = 4 AND EndedAt >= ?2 GROUP BY ProjectId`,
	// IX_Decisions_Tenant_Status (TenantId, Status, …): pending and not yet past ExpiresAt,
	// the inbox's effective "pending"; the attempt gives the project.
	pending: `SELECT a.ProjectId, COUNT(*) AS Runs FROM DecisionRequests d
JOIN ExecutionAttempts a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
WHERE d.TenantId = ?1 AND d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?2)
GROUP BY a.ProjectId`,
	budget: `SELECT MaxLeasedRuns FROM Tenants WHERE TenantId = ?1`,
	// PK_RunWaits prefix (the tenant's waits: parked runs only), each run by primary key. A
	// parked run whose dueAt has passed is due (claimable), so queued, not waiting.
	waiting: `SELECT r.ProjectId, r.Band, COUNT(*) AS Runs FROM Runs AS r
WHERE r.RunId IN (SELECT w.RunId FROM RunWaits AS w WHERE w.TenantId = ?1) AND r.TenantId = ?1 AND r.State = 0
    AND r.DueAt > ?2
GROUP BY r.ProjectId, r.Band`,

	// A scan of IX_Runs_SubjectQueue (queued runs only), a row lookup each.
	allQueued: `SELECT TenantId, Band, COUNT(*) AS Runs, MIN(CASE WHEN DueAt <= ?1 THEN DueAt END) AS OldestDue
FROM Runs WHERE State = 0 GROUP BY TenantId, Band`,
	allLeased: `SELECT TenantId, Band, COUNT(*) AS Runs FROM Runs WHERE State = 1 GROUP BY TenantId, Band`,
	// A scan of RunWaits (parked runs' open conditions only), each run by primary key.
	allWaiting: `SELECT r.TenantId, r.Band, COUNT(*) AS Runs FROM Runs AS r
WHERE r.RunId IN (SELECT w.RunId FROM RunWaits AS w) AND r.State = 0 AND r.DueAt > ?1
GROUP BY r.TenantId, r.Band`,
	// One seek of IX_Decisions_Tenant_Status per tenant, instead of reading every
	// decision ever asked.
	allPending: `SELECT t.TenantId, (SELECT COUNT(*) FROM DecisionRequests d
    WHERE d.TenantId = t.TenantId AND d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?1)) AS Runs
FROM Tenants t`,
}
