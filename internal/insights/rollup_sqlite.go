package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { rollupSets.Register(sqldb.SQLiteName, &sqliteRollups) }

// The SQLite roll-up statements. INDEXED BY pins the Version index of each source table
// (the projector's range) and IX_Attempts_Run_Step for a run's attempts (a handful per run).

// sqliteRunAttempt reads one column of a run's first or latest attempt.
func sqliteRunAttempt(col, order string) string {
	return `(SELECT a.` + col + ` FROM ExecutionAttempts a INDEXED BY IX_Attempts_Run_Step WHERE a.RunId = r.RunId
        ORDER BY a.StartedAt ` + order + `, a.AttemptId ` + order + ` LIMIT 1)`
}

// sqliteNoUsage: the usage columns of a source row that is not a call.
const sqliteNoUsage = `NULL AS Model, NULL AS InputTokens, NULL AS OutputTokens, NULL AS CacheReadInputTokens,
    NULL AS CacheCreationInputTokens, NULL AS ReasoningOutputTokens, NULL AS CostMicros`

var sqliteRollups = rollupQueries{
	runs: `SELECT 1 AS Source, r.RunId AS Id, r.TenantId, r.Version, r.State, r.Outcome AS Status, r.ProjectId, r.AgentId,
    NULL AS ReleaseId, r.Kind, NULL AS Subkey, r.QueuedAt AS StartAt, r.EndedAt AS EndAt,
    ` + sqliteRunAttempt("StartedAt", "ASC") + ` AS FirstClaimAt,
    ` + sqliteRunAttempt("ReleaseId", "ASC") + ` AS FirstRelease,
    ` + sqliteRunAttempt("ReleaseId", "DESC") + ` AS LastRelease,
    (SELECT COUNT(*) FROM ExecutionAttempts a INDEXED BY IX_Attempts_Run_Step WHERE a.RunId = r.RunId) AS Attempts,
    r.ErrorCode, ` + sqliteNoUsage + `
FROM Runs r INDEXED BY IX_Runs_Version
WHERE r.Version > ?1 AND r.Version < ?2
ORDER BY r.Version LIMIT ?3`,

	// LEFT JOIN keeps the Version index the outer loop; an attempt's run always exists.
	attempts: `SELECT 2 AS Source, a.AttemptId AS Id, a.TenantId, a.Version, a.State, NULL AS Status, a.ProjectId, a.AgentId,
    a.ReleaseId, r.Kind, NULL AS Subkey, NULL AS StartAt, a.EndedAt AS EndAt,
    NULL AS FirstClaimAt, NULL AS FirstRelease, NULL AS LastRelease, NULL AS Attempts, a.ErrorCode, ` + sqliteNoUsage + `
FROM ExecutionAttempts a INDEXED BY IX_Attempts_Version
LEFT JOIN Runs r ON r.RunId = a.RunId
WHERE a.Version > ?1 AND a.Version < ?2
ORDER BY a.Version LIMIT ?3`,

	calls: `SELECT 3 AS Source, c.CallId AS Id, c.TenantId, c.Version, NULL AS State, c.Status, a.ProjectId, a.AgentId,
    a.ReleaseId, r.Kind, c.Target AS Subkey, c.StartedAt AS StartAt, c.EndedAt AS EndAt,
    NULL AS FirstClaimAt, NULL AS FirstRelease, NULL AS LastRelease, NULL AS Attempts, NULL AS ErrorCode, c.Model,
    c.InputTokens, c.OutputTokens, c.CacheReadInputTokens, c.CacheCreationInputTokens, c.ReasoningOutputTokens, c.CostMicros
FROM CallRecords c INDEXED BY IX_Calls_Version
LEFT JOIN ExecutionAttempts a ON a.AttemptId = c.AttemptId
LEFT JOIN Runs r ON r.RunId = a.RunId
WHERE c.Version > ?1 AND c.Version < ?2
ORDER BY c.Version LIMIT ?3`,

	decisions: `SELECT 4 AS Source, d.DecisionId AS Id, d.TenantId, d.Version, NULL AS State, d.Status, a.ProjectId, a.AgentId,
    a.ReleaseId, r.Kind, CAST(d.Kind AS TEXT) AS Subkey, d.RequestedAt AS StartAt, d.AnsweredAt AS EndAt,
    NULL AS FirstClaimAt, NULL AS FirstRelease, NULL AS LastRelease, NULL AS Attempts, NULL AS ErrorCode, ` + sqliteNoUsage + `
FROM DecisionRequests d INDEXED BY IX_Decisions_Version
LEFT JOIN ExecutionAttempts a ON a.AttemptId = d.AttemptId
LEFT JOIN Runs r ON r.RunId = a.RunId
WHERE d.Version > ?1 AND d.Version < ?2
ORDER BY d.Version LIMIT ?3`,

	factsOf: `SELECT Facts FROM InsightFacts WHERE TenantId = ?1 AND Source = ?2 AND SourceId = ?3`,

	insertFacts: `INSERT INTO InsightFacts (TenantId, Source, SourceId, Facts) VALUES (?1, ?2, ?3, ?4)`,

	updateFacts: `UPDATE InsightFacts SET Facts = ?4 WHERE TenantId = ?1 AND Source = ?2 AND SourceId = ?3`,

	upsertCell: `INSERT INTO InsightCells (TenantId, Metric, DimSet, Grain, BucketStart, CellHash, ProjectId, AgentId, ReleaseId, Kind,
    Subkey, Series, Bin, N, Peak, ErrorCode)
VALUES (?1, ?2, ?15, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16)
ON CONFLICT (TenantId, Metric, DimSet, Grain, BucketStart, CellHash) DO UPDATE SET N = N + excluded.N, Peak = max(Peak, excluded.Peak)`,

	// The primary key's range: (TenantId, Metric, DimSet, Grain, BucketStart) seeks the window.
	cells: `SELECT BucketStart, ProjectId, AgentId, ReleaseId, Kind, ErrorCode, Subkey, Series, Bin, N, Peak
FROM InsightCells
WHERE TenantId = ?1 AND Metric = ?2 AND DimSet = ?11 AND Grain = ?3 AND BucketStart >= ?4 AND BucketStart < ?5 AND N <> 0
    AND (?6 IS NULL OR ProjectId = ?6) AND (?7 IS NULL OR AgentId = ?7) AND (?8 IS NULL OR ReleaseId = ?8)
    AND (?9 IS NULL OR Kind = ?9) AND (?10 IS NULL OR Series = ?10)`,

	coarseCurrent: `SELECT COUNT(*) FROM FeedProjectors WHERE Name = ?1 AND CoarseThrough = Position`,

	markCoarse: `UPDATE FeedProjectors SET CoarseThrough = ?2 WHERE Name = ?1`,

	clearCoarse: `DELETE FROM InsightCells WHERE Grain = ?1`,

	// Every cell of a CellHash in a dimension set has the same dimensions (the hash is of
	// them), so MIN of each is that value. SQLite reads the source rows whole before it
	// inserts (the table is read and written in one statement).
	buildCoarse: `INSERT INTO InsightCells (TenantId, Metric, DimSet, Grain, BucketStart, CellHash, ProjectId, AgentId, ReleaseId, Kind,
    Subkey, Series, Bin, N, Peak, ErrorCode)
SELECT TenantId, Metric, DimSet, ?1, BucketStart - BucketStart % ?1, CellHash, MIN(ProjectId), MIN(AgentId), MIN(ReleaseId),
    MIN(Kind), MIN(Subkey), MIN(Series), MIN(Bin), SUM(N), MAX(Peak), MIN(ErrorCode)
FROM InsightCells
WHERE Grain = ?2 AND Metric IN (` + binnedList() + `)
GROUP BY TenantId, Metric, DimSet, BucketStart - BucketStart % ?1, CellHash`,
}
