package decisions

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite serialises writers (immediate transactions), so lock is a plain read: inside the
// write transaction it already holds the row as SQL Server's UPDLOCK does. Every write
// stamps Version from the database-wide counter (migrations/sqlite 000001); a multi-row
// UPDATE gives its rows one new value, which still grows past each row's old one.
//
// "+d.TenantId" and "+d.Status" (a unary plus) keep the planner off IX_Decisions_Tenant_Status,
// which it would otherwise pick for an attempt's decisions and read the tenant's whole
// pending set; the attempt's index drives those statements.
//
// Reads join the attempt by primary key with CROSS JOIN, which SQLite takes as an inner
// join whose tables it visits in the order written, and the run with LEFT JOIN (a decision
// is read even while retention is deleting its run; a left join keeps that order too): the
// decision index drives the statement and each row costs two key lookups, whatever the
// planner would guess without statistics.

// sqliteFrom is a decision with its attempt and run.
const sqliteFrom = ` FROM DecisionRequests AS d
CROSS JOIN ExecutionAttempts AS a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
LEFT JOIN Runs AS r ON r.RunId = a.RunId AND r.TenantId = a.TenantId`

// sqliteRead is the select list and joins of every read that returns decisions.
const sqliteRead = `SELECT ` + sqliteColumns + `, ` + sourceColumns + sqliteFrom

var sqliteQueries = queries{
	insert: `INSERT INTO DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, Version, AnswerJson, AnsweredBy, ExpiresAt, PriorPhase, RunId,
    IdempotencyKey, RequestHash)
VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, 'pending', ?8, NULL, (SELECT Value + 1 FROM RowVersionCounter), NULL, NULL, ?9, ?10,
    ?11, ?12, ?13)`,
	// byKey: UX_Decisions_Idempotency seek.
	byKey: `SELECT ` + sqliteColumns + `, ` + sourceColumns + `, d.RequestHash` + sqliteFrom + `
WHERE d.TenantId = ?1 AND d.RunId = ?2 AND d.IdempotencyKey = ?3`,
	// listByRun: the runs' attempts first (IX_Attempts_Run_Step), then each attempt's
	// decisions (IX_Decisions_Attempt); CROSS JOIN keeps that order. The sort reads the
	// decisions of those runs, bounded by their attempts and each attempt's decisions.
	listByRun: `SELECT ` + sqliteColumns + `, ` + sourceColumns + ` FROM ExecutionAttempts AS a
CROSS JOIN DecisionRequests AS d ON d.AttemptId = a.AttemptId AND d.TenantId = a.TenantId
LEFT JOIN Runs AS r ON r.RunId = a.RunId AND r.TenantId = a.TenantId
WHERE a.RunId IN (SELECT value FROM json_each(?2)) AND +a.TenantId = ?1
    AND (?3 IS NULL OR d.RequestedAt > ?3 OR (d.RequestedAt = ?3 AND d.DecisionId > ?4))
ORDER BY d.RequestedAt, d.DecisionId LIMIT ?5`,
	get:  sqliteRead + ` WHERE d.TenantId = ?1 AND d.DecisionId = ?2`,
	lock: `SELECT ` + sqliteColumns + ` FROM DecisionRequests AS d WHERE d.TenantId = ?1 AND d.DecisionId = ?2`,
	byIDs: sqliteRead + `
WHERE d.DecisionId IN (SELECT value FROM json_each(?2)) AND +d.TenantId = ?1`,
	answer: `UPDATE DecisionRequests SET Status = ?3, AnswerJson = ?4, ApprovalId = ?5, AnsweredBy = ?6, AnsweredAt = ?7,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND DecisionId = ?2 AND Status = 'pending' AND Version = ?8 AND (ExpiresAt IS NULL OR ExpiresAt > ?7)`,
	list: sqliteRead + `
WHERE d.TenantId = ?1
    AND (d.Status = ?2 OR (?2 = 'expired' AND d.Status = 'pending'))
    AND (CASE WHEN d.Status = 'pending' AND d.ExpiresAt <= ?3 THEN 'expired' ELSE d.Status END) = ?2
    AND (?4 IS NULL OR a.ProjectId = ?4)
    AND (?8 IS NULL OR d.Kind = ?8) AND (?9 IS NULL OR d.RequestedAt >= ?9) AND (?10 IS NULL OR d.RequestedAt < ?10)
    AND (?11 IS NULL OR a.AgentId = ?11) AND (?12 IS NULL OR a.ReleaseId = ?12) AND (?13 IS NULL OR r.Kind = ?13)
    AND (?5 IS NULL OR d.RequestedAt > ?5 OR (d.RequestedAt = ?5 AND d.DecisionId > ?6))
ORDER BY d.RequestedAt, d.DecisionId LIMIT ?7`,
	// Two branches, each at most a page in its own order, merged.
	listPendingFirst: `SELECT * FROM (
    SELECT * FROM (SELECT 0 AS Rank, ` + sqliteColumns + `, ` + sourceColumns + sqliteFrom + `
        WHERE d.TenantId = ?1 AND d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?2)
            AND (?3 IS NULL OR a.ProjectId = ?3)
            AND (?8 IS NULL OR d.Kind = ?8) AND (?9 IS NULL OR d.RequestedAt >= ?9) AND (?10 IS NULL OR d.RequestedAt < ?10)
            AND (?11 IS NULL OR a.AgentId = ?11) AND (?12 IS NULL OR a.ReleaseId = ?12) AND (?13 IS NULL OR r.Kind = ?13)
            AND (?4 IS NULL OR (?4 = 0 AND (d.RequestedAt > ?5 OR (d.RequestedAt = ?5 AND d.DecisionId > ?6))))
        ORDER BY d.RequestedAt, d.DecisionId LIMIT ?7)
    UNION ALL
    SELECT * FROM (SELECT 1 AS Rank, ` + sqliteColumns + `, ` + sourceColumns + sqliteFrom + `
        WHERE d.TenantId = ?1 AND (d.Status <> 'pending' OR d.ExpiresAt <= ?2)
            AND (?3 IS NULL OR a.ProjectId = ?3)
            AND (?8 IS NULL OR d.Kind = ?8) AND (?9 IS NULL OR d.RequestedAt >= ?9) AND (?10 IS NULL OR d.RequestedAt < ?10)
            AND (?11 IS NULL OR a.AgentId = ?11) AND (?12 IS NULL OR a.ReleaseId = ?12) AND (?13 IS NULL OR r.Kind = ?13)
            AND (?4 IS NULL OR ?4 = 0 OR d.RequestedAt > ?5 OR (d.RequestedAt = ?5 AND d.DecisionId > ?6))
        ORDER BY d.RequestedAt, d.DecisionId LIMIT ?7)
)
ORDER BY Rank, RequestedAt, DecisionId LIMIT ?7`,
	listByAttempt: sqliteRead + `
WHERE d.TenantId = ?1 AND d.AttemptId = ?2
    AND (?3 IS NULL OR d.RequestedAt > ?3 OR (d.RequestedAt = ?3 AND d.DecisionId > ?4))
ORDER BY d.RequestedAt, d.DecisionId LIMIT ?5`,
	newestPrior: `SELECT PriorPhase FROM DecisionRequests INDEXED BY IX_Decisions_Attempt
WHERE AttemptId = ?2 AND TenantId = ?1 ORDER BY RequestedAt DESC, DecisionId DESC LIMIT 1`,
	countPending: `SELECT COUNT(*) FROM (SELECT 1 FROM DecisionRequests AS d INDEXED BY IX_Decisions_Attempt
WHERE d.AttemptId = ?2 AND +d.TenantId = ?1 AND +d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?3) LIMIT ?4)`,
	restorePhase: `UPDATE ExecutionAttempts SET Phase = ?3, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND AttemptId = ?2 AND State = 0 AND Phase = 5
    AND NOT EXISTS (SELECT 1 FROM DecisionRequests AS d
        WHERE d.AttemptId = ?2 AND +d.TenantId = ?1 AND +d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?4))`,
	// closeForRun (every run's end) seeks the run's attempts (IX_Attempts_Run_Step), then
	// each one's decisions (IX_Decisions_Attempt): the unary plus keeps the planner, which has
	// no statistics, off IX_Decisions_Tenant_Status, which read every pending decision of
	// the tenant.
	closeForRun: `UPDATE DecisionRequests
SET Status = CASE WHEN ExpiresAt IS NOT NULL AND ExpiresAt <= ?3 THEN 'expired' ELSE 'cancelled' END,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId IN (SELECT a.AttemptId FROM ExecutionAttempts AS a WHERE a.RunId = ?2 AND +a.TenantId = ?1)
    AND +TenantId = ?1 AND +Status = 'pending'`,
	// The filter repeats IX_Decisions_PendingExpiry's WHERE terms, so the partial index
	// qualifies.
	due: `SELECT DISTINCT TenantId, AttemptId FROM DecisionRequests
WHERE Status = 'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= ?1 LIMIT ?2`,
	expireForAttempt: `UPDATE DecisionRequests SET Status = 'expired', Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId = ?2 AND +TenantId = ?1 AND +Status = 'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= ?3
RETURNING DecisionId`,
}
