package traces

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// The SQLite query set. Each range read walks its table's Version index (migration 26), so
// a step reads at most the limit rows of each table past the position.
var sqliteQueries = queries{
	runs: `SELECT r.RunId, r.TenantId, r.Version, r.ProjectId, r.Kind, r.AgentId, r.QueuedAt, r.EndedAt, r.Outcome,
    r.ErrorCode, r.Attempt, r.ContinuedFromRunId, d.DelegationId, d.AttemptId AS DelegationAttemptId,
    d.CreatedAt AS DelegatedAt, d.ChildAgentId, d.Status AS DelegationStatus
FROM Runs r INDEXED BY IX_Runs_Version
LEFT JOIN SubAgentDelegations d ON d.ChildRunId = r.RunId
WHERE r.Version > ?1 AND r.Version < ?2 AND r.State = 2
ORDER BY r.Version LIMIT ?3`,

	attempts: `SELECT a.AttemptId, a.RunId, a.TenantId, a.Version, a.AgentId, a.ReleaseId, a.AdapterVersion, a.ModelProfileId,
    a.State, a.StartedAt, a.EndedAt, a.FencingToken
FROM ExecutionAttempts a INDEXED BY IX_Attempts_Version
WHERE a.Version > ?1 AND a.Version < ?2 AND a.State <> 0
ORDER BY a.Version LIMIT ?3`,

	calls: `SELECT c.CallId, c.AttemptId, a.RunId, c.TenantId, c.Version, c.Kind, c.Target, c.Status, c.StartedAt, c.EndedAt,
    c.Model, c.Provider, c.Operation, c.ResponseModel, c.FinishReasons, c.InputTokens, c.OutputTokens,
    c.CacheReadInputTokens, c.CacheCreationInputTokens, c.ReasoningOutputTokens, c.CostMicros
FROM CallRecords c INDEXED BY IX_Calls_Version
JOIN ExecutionAttempts a ON a.AttemptId = c.AttemptId
WHERE c.Version > ?1 AND c.Version < ?2 AND c.Status <> 'started'
ORDER BY c.Version LIMIT ?3`,

	decisions: `SELECT d.DecisionId, d.AttemptId, a.RunId, d.TenantId, d.Version, d.Kind, d.Status, d.RequestedAt,
    COALESCE(d.AnsweredAt, d.ExpiresAt) AS ClosedAt
FROM DecisionRequests d INDEXED BY IX_Decisions_Version
JOIN ExecutionAttempts a ON a.AttemptId = d.AttemptId
WHERE d.Version > ?1 AND d.Version < ?2 AND d.Status <> 'pending'
ORDER BY d.Version LIMIT ?3`,

	// A primary-key seek per hop; a chain is bounded (depth 8, continuations by MaxAttempts).
	root: `WITH RECURSIVE up(RunId, Up, Hops) AS (
    SELECT RunId, COALESCE(ContinuedFromRunId, ParentRunId), 0 FROM Runs WHERE RunId = ?1
    UNION ALL
    SELECT r.RunId, COALESCE(r.ContinuedFromRunId, r.ParentRunId), u.Hops + 1 FROM up u JOIN Runs r ON r.RunId = u.Up
    WHERE u.Hops < 1000
)
SELECT u.RunId, r.TraceParent FROM up u JOIN Runs r ON r.RunId = u.RunId ORDER BY u.Hops DESC LIMIT 1`,

	checkpoints: `SELECT Sequence, Phase, CreatedAt FROM Checkpoints WHERE AttemptId = ?1 ORDER BY Sequence LIMIT ?2`,
}
