package retention

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// Statements that name their rows by a JSON list of ids also check TenantId, written
// "+x.TenantId": the unary plus keeps the planner from seeking a TenantId index (which,
// without statistics, it would pick and then read every row of the tenant against the list)
// and makes the list drive primary-key or RunId seeks, with TenantId checked per row.
//
// SQLite serialises writers (immediate transactions), so nothing can change a chain between
// a write transaction's reads and its deletes: lockMembers is members. SQLite has no
// DELETE ... LIMIT in its default build, so a bounded delete picks its keys in a subquery.
// Foreign keys are enforced (foreign_keys(1)) and checked at the end of each statement, so
// one DELETE may remove a run and the continuation that references it.

const sqliteMembers = `WITH RECURSIVE chain (RootId, RunId) AS (
    SELECT r.RunId, r.RunId FROM Runs r
    WHERE r.RunId IN (SELECT value FROM json_each(?2)) AND +r.TenantId = ?1
    UNION ALL
    SELECT c.RootId, x.RunId FROM chain c JOIN Runs x ON x.ContinuedFromRunId = c.RunId
    WHERE +x.TenantId = ?1
)
SELECT ch.RootId, m.RunId, m.State, m.EndedAt, m.IdempotencyKey,
    EXISTS (SELECT 1 FROM Runs k WHERE k.ParentRunId = m.RunId AND k.ParentRunId IS NOT NULL) AS HasChild,
    p.RetentionDays
FROM chain ch
JOIN Runs m ON m.RunId = ch.RunId
JOIN Projects p ON p.TenantId = m.TenantId AND p.ProjectId = m.ProjectId`

// sqliteAttemptsOf is the attempts of the runs in ?2.
const sqliteAttemptsOf = `SELECT a.AttemptId FROM ExecutionAttempts a
    WHERE a.RunId IN (SELECT value FROM json_each(?2)) AND +a.TenantId = ?1`

var sqliteQueries = queries{
	tenants: `SELECT TenantId, MIN(RetentionDays) AS MinDays FROM Projects
WHERE TenantId > ?1 GROUP BY TenantId ORDER BY TenantId LIMIT ?2`,

	// EndedAt and the cutoff are both fixed-width UTC text, which compares as time.
	roots: `SELECT r.RunId, r.QueuedAt FROM Runs r INDEXED BY IX_Runs_Tenant_Queued
JOIN Projects p ON p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId
WHERE r.TenantId = ?1 AND r.QueuedAt < ?3 AND (r.QueuedAt, r.RunId) > (?4, ?5)
    AND r.State = 2 AND r.ContinuedFromRunId IS NULL
    AND r.EndedAt < strftime('%Y-%m-%dT%H:%M:%fZ', ?2, '-' || p.RetentionDays || ' days')
ORDER BY r.QueuedAt, r.RunId LIMIT ?6`,

	members:     sqliteMembers,
	lockMembers: sqliteMembers,

	countAttempts: `SELECT COUNT(*) FROM ExecutionAttempts
WHERE RunId IN (SELECT value FROM json_each(?2)) AND +TenantId = ?1`,

	deleteCheckpoints: `DELETE FROM Checkpoints WHERE CheckpointId IN (
    SELECT c.CheckpointId FROM Checkpoints c
    WHERE c.AttemptId IN (` + sqliteAttemptsOf + `) AND +c.TenantId = ?1 LIMIT ?3)`,
	deleteCalls: `DELETE FROM CallRecords WHERE CallId IN (
    SELECT c.CallId FROM CallRecords c
    WHERE c.AttemptId IN (` + sqliteAttemptsOf + `) AND +c.TenantId = ?1 LIMIT ?3)`,
	deleteDecisions: `DELETE FROM DecisionRequests WHERE DecisionId IN (
    SELECT d.DecisionId FROM DecisionRequests d
    WHERE d.AttemptId IN (` + sqliteAttemptsOf + `) AND +d.TenantId = ?1 LIMIT ?3)`,
	deleteDelegations: `DELETE FROM SubAgentDelegations WHERE DelegationId IN (
    SELECT s.DelegationId FROM SubAgentDelegations s
    WHERE s.AttemptId IN (` + sqliteAttemptsOf + `) AND +s.TenantId = ?1 LIMIT ?3)`,
	deleteAttempts: `DELETE FROM ExecutionAttempts WHERE AttemptId IN (` + sqliteAttemptsOf + ` LIMIT ?3)`,

	tombstones: `INSERT INTO IdempotencyTombstones (TenantId, IdempotencyKey, RunId, PurgedAt)
SELECT r.TenantId, r.IdempotencyKey, r.RunId, ?3 FROM Runs r
WHERE r.RunId IN (SELECT value FROM json_each(?2)) AND +r.TenantId = ?1 AND r.IdempotencyKey IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM IdempotencyTombstones t WHERE t.TenantId = r.TenantId AND t.IdempotencyKey = r.IdempotencyKey)`,

	deleteRuns: `DELETE FROM Runs WHERE RunId IN (SELECT value FROM json_each(?2)) AND +TenantId = ?1 AND State = 2`,

	backlog: `INSERT INTO PurgeBacklog (TenantId, RunId, PurgedAt)
SELECT r.TenantId, r.RunId, ?3 FROM Runs r
WHERE r.RunId IN (SELECT value FROM json_each(?2)) AND +r.TenantId = ?1 AND r.State = 2`,
	backlogPage: `SELECT TenantId, RunId FROM PurgeBacklog WHERE (TenantId, RunId) > (?1, ?2)
ORDER BY TenantId, RunId LIMIT ?3`,
	backlogDone: `DELETE FROM PurgeBacklog WHERE TenantId = ?1 AND RunId IN (SELECT value FROM json_each(?2))`,
}
