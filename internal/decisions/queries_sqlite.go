package decisions

// SQLite serialises writers (immediate transactions), so lock is a plain read: inside the
// write transaction it already holds the row as SQL Server's UPDLOCK does. Every write
// stamps Version from the database-wide counter (migrations/sqlite 000001); a multi-row
// UPDATE gives its rows one new value, which still grows past each row's old one.
var sqliteQueries = queries{
	insert: `INSERT INTO DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, Version, AnswerJson, AnsweredBy, ExpiresAt)
VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, 'pending', ?8, NULL, (SELECT Value + 1 FROM RowVersionCounter), NULL, NULL, ?9)`,
	get:  `SELECT ` + columns + ` FROM DecisionRequests WHERE TenantId = ?1 AND DecisionId = ?2`,
	lock: `SELECT ` + columns + ` FROM DecisionRequests WHERE TenantId = ?1 AND DecisionId = ?2`,
	answer: `UPDATE DecisionRequests SET Status = ?3, AnswerJson = ?4, ApprovalId = ?5, AnsweredBy = ?6, AnsweredAt = ?7,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND DecisionId = ?2 AND Status = 'pending' AND Version = ?8 AND (ExpiresAt IS NULL OR ExpiresAt > ?7)`,
	list: `SELECT ` + columns + ` FROM DecisionRequests
WHERE TenantId = ?1
    AND (?2 IS NULL OR Status = ?2 OR (?2 = 'expired' AND Status = 'pending'))
    AND (?2 IS NULL OR (CASE WHEN Status = 'pending' AND ExpiresAt <= ?3 THEN 'expired' ELSE Status END) = ?2)
    AND (?4 IS NULL OR RequestedAt > ?4 OR (RequestedAt = ?4 AND DecisionId > ?5))
ORDER BY RequestedAt, DecisionId LIMIT ?6`,
	listByAttempt: `SELECT ` + columns + ` FROM DecisionRequests
WHERE TenantId = ?1 AND AttemptId = ?2
    AND (?3 IS NULL OR RequestedAt > ?3 OR (RequestedAt = ?3 AND DecisionId > ?4))
ORDER BY RequestedAt, DecisionId LIMIT ?5`,
	closeForAttempt: `UPDATE DecisionRequests
SET Status = CASE WHEN ExpiresAt IS NOT NULL AND ExpiresAt <= ?3 THEN 'expired' ELSE 'cancelled' END,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND AttemptId = ?2 AND Status = 'pending'`,
	// SQLite has no UPDATE ... LIMIT unless compiled with it: the batch is chosen by a
	// subquery over IX_Decisions_PendingExpiry (its WHERE terms repeated so it qualifies).
	expire: `UPDATE DecisionRequests SET Status = 'expired', Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE DecisionId IN (SELECT DecisionId FROM DecisionRequests
    WHERE Status = 'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= ?1 LIMIT ?2)`,
}
