package checkpoints

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite serialises writers (one writer connection, immediate transactions), so every read
// inside a write transaction already sees what SQL Server's locks give it. Checkpoints has
// no Version column, so nothing here stamps one; ExecutionAttempts is written only through
// the attempts package.
var sqliteQueries = queries{
	bySequence: `SELECT ` + sqliteCColumns + `, a.FencingToken AS AttemptToken
FROM Checkpoints AS c JOIN ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = ?1
WHERE c.TenantId = ?1 AND c.AttemptId = ?2 AND c.Sequence = ?3`,
	get: `SELECT ` + sqliteColumns + ` FROM Checkpoints WHERE TenantId = ?1 AND AttemptId = ?2 AND CheckpointId = ?3`,
	insert: `INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion,
    ContextSnapshotRef, Hash, CreatedAt)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`,
	list: `SELECT ` + sqliteColumns + ` FROM Checkpoints WHERE TenantId = ?1 AND AttemptId = ?2 AND Sequence > ?3
ORDER BY Sequence LIMIT ?4`,
	// SQLite has no CROSS APPLY: the correlated subquery picks each attempt's highest
	// sequence from UX_Checkpoints_Attempt_Sequence (read backwards), attempts without a
	// checkpoint drop out of the join, and the newest attempt wins. The run's attempts come
	// from IX_Attempts_Run_Step: with "a.TenantId = ?" plain, the planner (no statistics)
	// read every attempt of the tenant from IX_Attempts_Tenant_State_Ended.
	lastOfRun: `SELECT ` + sqliteCColumns + `, a.RunId
FROM ExecutionAttempts AS a
JOIN Checkpoints AS c ON c.AttemptId = a.AttemptId AND c.TenantId = ?1
    AND c.Sequence = (SELECT k.Sequence FROM Checkpoints AS k
        WHERE k.AttemptId = a.AttemptId AND k.TenantId = ?1 ORDER BY k.Sequence DESC LIMIT 1)
WHERE a.RunId = ?2 AND +a.TenantId = ?1
ORDER BY a.FencingToken DESC LIMIT 1`,
	runLink: `SELECT ContinuedFromRunId, ForkedFromCheckpointId FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	forkPoint: `SELECT ` + sqliteCColumns + `, a.RunId FROM Checkpoints AS c JOIN ExecutionAttempts AS a ON a.AttemptId = c.AttemptId
WHERE c.CheckpointId = ?2 AND c.TenantId = ?1 AND a.TenantId = ?1`,
}
