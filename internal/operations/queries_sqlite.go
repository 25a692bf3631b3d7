package operations

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

const sqliteColumns = `TenantId, OperationId, RequestKey, BodyDigest, Action, Reason, State, Matched, Cursor, Cancelled,
    CancelRequested, Continued, SkippedEnded, SkippedNotEnded, SkippedExhausted, SkippedNotFound, SkippedContinued, Holder, LeaseUntil,
    CreatedAt, CreatedBy, FinishedAt`

var sqliteQueries = queries{
	get:       `SELECT ` + sqliteColumns + ` FROM Operations WHERE TenantId = ?1 AND OperationId = ?2`,
	byRequest: `SELECT ` + sqliteColumns + ` FROM Operations WHERE TenantId = ?1 AND RequestKey = ?2`,
	insert: `INSERT INTO Operations (TenantId, OperationId, RequestKey, BodyDigest, Action, Reason, State, Matched, Cursor,
    Cancelled, CancelRequested, Continued, SkippedEnded, SkippedNotEnded, SkippedExhausted, SkippedNotFound, SkippedContinued, CreatedAt, CreatedBy)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, 0, 0, 0, 0, 0, 0, 0, 0, 0, ?8, ?9)`,
	insertRuns: `INSERT INTO OperationRuns (TenantId, OperationId, Seq, RunId)
SELECT ?1, ?2, ?3 + j.key + 1, j.value FROM json_each(?4) AS j`,
	pending: `SELECT TenantId, OperationId FROM Operations
WHERE State = 'running' AND (LeaseUntil IS NULL OR LeaseUntil < ?1) ORDER BY LeaseUntil LIMIT ?2`,
	take: `UPDATE Operations SET Holder = ?3, LeaseUntil = ?4
WHERE TenantId = ?1 AND OperationId = ?2 AND State = 'running' AND (LeaseUntil IS NULL OR LeaseUntil < ?5)`,
	hold: `UPDATE Operations SET LeaseUntil = ?5
WHERE TenantId = ?1 AND OperationId = ?2 AND Holder = ?3 AND Cursor = ?4 AND State = 'running'`,
	batch:     `SELECT Seq, RunId FROM OperationRuns WHERE TenantId = ?1 AND OperationId = ?2 AND Seq > ?3 ORDER BY Seq LIMIT ?4`,
	setResult: `UPDATE OperationRuns SET Result = ?4 WHERE TenantId = ?1 AND OperationId = ?2 AND Seq = ?3`,
	advance: `UPDATE Operations SET Cursor = ?3, Cancelled = Cancelled + ?4, CancelRequested = CancelRequested + ?5,
    Continued = Continued + ?6, SkippedEnded = SkippedEnded + ?7, SkippedNotEnded = SkippedNotEnded + ?8,
    SkippedExhausted = SkippedExhausted + ?9, SkippedNotFound = SkippedNotFound + ?10, FinishedAt = ?11,
    SkippedContinued = SkippedContinued + ?12,
    State = CASE WHEN ?11 IS NULL THEN State ELSE 'succeeded' END,
    Holder = CASE WHEN ?11 IS NULL THEN Holder ELSE NULL END,
    LeaseUntil = CASE WHEN ?11 IS NULL THEN LeaseUntil ELSE NULL END
WHERE TenantId = ?1 AND OperationId = ?2`,
}
