package calls

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite serialises writers (one writer connection, immediate transactions), so every read
// inside a write transaction already sees what SQL Server's locks give it. CallRecords has
// a Version column (a declared addition): every INSERT and UPDATE stamps it from the
// database-wide counter, as the table's triggers demand (migrations/sqlite 000006).
var sqliteQueries = queries{
	bySequence: `SELECT ` + sqliteCColumns + `, a.FencingToken AS AttemptToken
FROM CallRecords AS c JOIN ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = ?1
WHERE c.TenantId = ?1 AND c.AttemptId = ?2 AND c.Sequence = ?3`,
	byID: `SELECT ` + sqliteCColumns + `, a.FencingToken AS AttemptToken
FROM CallRecords AS c JOIN ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = ?1
WHERE c.TenantId = ?1 AND c.AttemptId = ?2 AND c.CallId = ?3`,
	insert: `INSERT INTO CallRecords (` + insertColumns + `,
    Status, Version)
VALUES (` + insertValues("?") + `, 'started', (SELECT Value + 1 FROM RowVersionCounter))
RETURNING ` + sqliteColumns,
	finish: `UPDATE CallRecords SET Status = ?4, ReceiptRef = ?5, EndedAt = ?6, ResponseModel = ?8, FinishReasons = ?9,
    InputTokens = ?10, OutputTokens = ?11, CacheReadInputTokens = ?12, CacheCreationInputTokens = ?13,
    ReasoningOutputTokens = ?14, CostMicros = ?15, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND AttemptId = ?2 AND CallId = ?3 AND Status = 'started' AND (?7 IS NULL OR Version = ?7)
RETURNING ` + sqliteColumns,
	list: `SELECT ` + sqliteColumns + ` FROM CallRecords WHERE TenantId = ?1 AND AttemptId = ?2 AND Sequence > ?3
ORDER BY Sequence LIMIT ?4`,
	abandon: `UPDATE CallRecords SET Status = 'abandoned', EndedAt = ?3, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE +TenantId = ?1 AND AttemptId = ?2 AND Status = 'started'`,
	// The attempt by its primary key, its calls by UX_Calls_Attempt_Sequence.
	attemptUsage: `SELECT ` + usageSums + `
FROM ExecutionAttempts a LEFT JOIN CallRecords c ON c.AttemptId = a.AttemptId AND c.TenantId = ?1
WHERE a.TenantId = ?1 AND a.AttemptId = ?2 GROUP BY a.AttemptId`,
	// The run by its primary key, its attempts by IX_Attempts_Run_Step, their calls as above.
	runUsage: `SELECT ` + usageSums + `
FROM Runs r LEFT JOIN ExecutionAttempts a ON a.RunId = r.RunId AND a.TenantId = ?1
    LEFT JOIN CallRecords c ON c.AttemptId = a.AttemptId AND c.TenantId = ?1
WHERE r.TenantId = ?1 AND r.RunId = ?2 GROUP BY r.RunId`,
	addCost: `INSERT INTO ProjectDailyCosts (TenantId, ProjectId, Day, CostMicros) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (TenantId, ProjectId, Day) DO UPDATE SET CostMicros = CostMicros + excluded.CostMicros
RETURNING CostMicros,
    (SELECT p.DailyCostBudgetMicros FROM Projects p WHERE p.TenantId = ?1 AND p.ProjectId = ?2) AS DailyCostBudgetMicros`,

	// listByStarted, listByEnded: the index's range read backwards from the bound (rows of
	// one time sorted by id, a few); the filters are residuals, the attempt (and its run)
	// read by primary key only when one of its filters is set, as the insights filter calls.
	// The not* lists (?14 targets, ?15 models; '[]' for none) keep a call without a model.
	listByStarted: sqliteTenantList("StartedAt", "IX_Calls_Tenant_Started"),
	listByEnded:   sqliteTenantList("EndedAt", "IX_Calls_Tenant_Ended"),
}

// sqliteTenantList orders by CallRecords.<at>: the bare name is the answered text's alias,
// which the index does not order.
func sqliteTenantList(at, index string) string {
	return `SELECT ` + sqliteColumns + ` FROM CallRecords INDEXED BY ` + index + `
WHERE TenantId = ?1 AND ` + at + ` >= ?2 AND (` + at + `, CallId) < (?3, ?4)
    AND (?6 IS NULL OR Target = ?6) AND (?7 IS NULL OR Model = ?7)
    AND (?13 IS NULL OR (?13 = 1 AND length(Model) > 0) OR (?13 = 0 AND COALESCE(length(Model), 0) = 0))
    AND (?14 = '[]' OR Target NOT IN (SELECT value FROM json_each(?14)))
    AND (?15 = '[]' OR COALESCE(Model, '') NOT IN (SELECT value FROM json_each(?15)))
    AND (?8 = 0 OR ` + reportedUsage + `)
    AND ((?9 IS NULL AND ?10 IS NULL AND ?11 IS NULL AND ?12 IS NULL) OR EXISTS (SELECT 1 FROM ExecutionAttempts AS a
        WHERE a.AttemptId = CallRecords.AttemptId AND +a.TenantId = ?1 AND (?9 IS NULL OR a.ProjectId = ?9)
        AND (?10 IS NULL OR a.AgentId = ?10) AND (?11 IS NULL OR a.ReleaseId = ?11)
        AND (?12 IS NULL OR EXISTS (SELECT 1 FROM Runs AS r WHERE r.RunId = a.RunId AND +r.TenantId = ?1 AND r.Kind = ?12))))
ORDER BY CallRecords.` + at + ` DESC, CallId DESC LIMIT ?5`
}
