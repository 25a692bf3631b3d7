package traces

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set. Shared rules: docs/tsql-notes.md. Every statement runs in
// maintenance scope (the security policy's bypass) in a read transaction; the range reads
// seek their table's Version index (migration 26) from @p1, TOP (@p3), then look up the
// columns the index does not carry: a bounded batch, so OPTION (MAXDOP 1) and no hints.
// Under READ_COMMITTED_SNAPSHOT they read the committed versions below the ceiling, which
// the runner read first (MIN_ACTIVE_ROWVERSION): nothing below it can still change.
var mssqlQueries = queries{
	// runs: the delegation by UX_Delegations_ChildRun (at most one per child run).
	runs: `SELECT TOP (@p3) r.RunId, r.TenantId, r.Version, r.ProjectId, r.Kind, r.AgentId, r.QueuedAt, r.EndedAt, r.Outcome,
    r.ErrorCode, r.Attempt, r.ContinuedFromRunId, d.DelegationId, d.AttemptId AS DelegationAttemptId,
    d.CreatedAt AS DelegatedAt, d.ChildAgentId, d.Status AS DelegationStatus
FROM dbo.Runs AS r
LEFT JOIN dbo.SubAgentDelegations AS d ON d.ChildRunId = r.RunId
WHERE r.Version > @p1 AND r.Version < @p2 AND r.State = 2
ORDER BY r.Version
OPTION (MAXDOP 1);`,

	attempts: `SELECT TOP (@p3) a.AttemptId, a.RunId, a.TenantId, a.Version, a.AgentId, a.ReleaseId, a.AdapterVersion,
    a.ModelProfileId, a.State, a.StartedAt, a.EndedAt, a.FencingToken
FROM dbo.ExecutionAttempts AS a
WHERE a.Version > @p1 AND a.Version < @p2 AND a.State <> 0
ORDER BY a.Version
OPTION (MAXDOP 1);`,

	// calls: the attempt by its primary key for the run.
	calls: `SELECT TOP (@p3) c.CallId, c.AttemptId, a.RunId, c.TenantId, c.Version, c.Kind, c.Target, c.Status, c.StartedAt,
    c.EndedAt, c.Model, c.Provider, c.Operation, c.ResponseModel, c.FinishReasons, c.InputTokens, c.OutputTokens,
    c.CacheReadInputTokens, c.CacheCreationInputTokens, c.ReasoningOutputTokens, c.CostMicros
FROM dbo.CallRecords AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId
WHERE c.Version > @p1 AND c.Version < @p2 AND c.Status <> N'started'
ORDER BY c.Version
OPTION (MAXDOP 1);`,

	decisions: `SELECT TOP (@p3) d.DecisionId, d.AttemptId, a.RunId, d.TenantId, d.Version, d.Kind, d.Status, d.RequestedAt,
    COALESCE(d.AnsweredAt, d.ExpiresAt) AS ClosedAt
FROM dbo.DecisionRequests AS d
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = d.AttemptId
WHERE d.Version > @p1 AND d.Version < @p2 AND d.Status <> N'pending'
ORDER BY d.Version
OPTION (MAXDOP 1);`,

	// root: a PK_Runs seek per hop; MAXRECURSION bounds a damaged chain (the service bounds
	// depth at 8 and continuations by MaxAttempts).
	root: `WITH up (RunId, Up, Hops) AS (
    SELECT RunId, COALESCE(ContinuedFromRunId, ParentRunId), 0 FROM dbo.Runs WHERE RunId = @p1
    UNION ALL
    SELECT r.RunId, COALESCE(r.ContinuedFromRunId, r.ParentRunId), u.Hops + 1
    FROM up AS u INNER JOIN dbo.Runs AS r ON r.RunId = u.Up
)
SELECT TOP (1) u.RunId, r.TraceParent FROM up AS u INNER JOIN dbo.Runs AS r ON r.RunId = u.RunId ORDER BY u.Hops DESC
OPTION (MAXRECURSION 1000, MAXDOP 1);`,

	// checkpoints: UX_Checkpoints_Attempt_Sequence range, TOP (@p2).
	checkpoints: `SELECT TOP (@p2) Sequence, Phase, CreatedAt FROM dbo.Checkpoints WHERE AttemptId = @p1 ORDER BY Sequence
OPTION (MAXDOP 1);`,
}
