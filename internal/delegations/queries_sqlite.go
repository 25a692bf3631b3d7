package delegations

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite serialises writers (immediate transactions); every write stamps Version from the
// database-wide counter (migrations/sqlite 000001).
var sqliteQueries = queries{
	insert: `INSERT INTO SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth,
    Status, Version, CreatedAt)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, (SELECT Value + 1 FROM RowVersionCounter), ?9)
RETURNING ` + columns,
	get:        `SELECT ` + columns + ` FROM SubAgentDelegations WHERE TenantId = ?1 AND DelegationId = ?2`,
	byChildRun: `SELECT ` + columns + ` FROM SubAgentDelegations WHERE TenantId = ?1 AND ChildRunId = ?2`,
	listByAttempt: `SELECT ` + columns + ` FROM SubAgentDelegations
WHERE TenantId = ?1 AND AttemptId = ?2
    AND (?3 IS NULL OR CreatedAt > ?3 OR (CreatedAt = ?3 AND DelegationId > ?4))
ORDER BY CreatedAt, DelegationId LIMIT ?5`,
	// IX_Attempts_Run_Step finds the run's attempts, IX_Delegations_Attempt each one's
	// delegations; a bounded sort of at most the run's delegations.
	listByRun: `SELECT ` + prefixed("d.") + ` FROM ExecutionAttempts a INDEXED BY IX_Attempts_Run_Step
JOIN SubAgentDelegations d ON d.AttemptId = a.AttemptId
WHERE a.RunId = ?2 AND a.TenantId = ?1 AND d.TenantId = ?1
ORDER BY d.CreatedAt, d.DelegationId LIMIT ?3`,
	setStatus: `UPDATE SubAgentDelegations SET Status = ?3, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND DelegationId = ?2 AND Status <> ?3`,
	runByIdempotencyKey: `SELECT RunId FROM Runs WHERE TenantId = ?1 AND IdempotencyKey = ?2`,
	continuedFrom:       `SELECT ContinuedFromRunId FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	// IX_Runs_Parent_Subject finds the chain's runs, UX_Delegations_ChildRun their
	// delegations (CROSS JOIN keeps that order). The index is partial (ParentRunId IS NOT
	// NULL, migration 36); the equality implies it, the literal says so as on SQL Server.
	delegatedSiblings: `SELECT d.DelegationId, d.ChildRunId, d.Status
FROM Runs AS c INDEXED BY IX_Runs_Parent_Subject
CROSS JOIN SubAgentDelegations AS d ON d.ChildRunId = c.RunId
WHERE c.TenantId = ?1 AND c.ParentRunId = ?2 AND c.ParentRunId IS NOT NULL AND c.Subject = ?3 AND d.TenantId = ?1`,
}
