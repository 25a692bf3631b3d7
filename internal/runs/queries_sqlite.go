package runs

import "strings"

// SQLite runs one writer at a time (immediate transactions), so the claim needs no locking
// hints: its reads and its update cannot interleave with another claim's.

// sqliteStamp is the emulated rowversion (migrations/sqlite 000001).
const sqliteStamp = `(SELECT Value + 1 FROM RowVersionCounter)`

// sqliteEligible is what makes a queued run claimable: its project is active, no cancel is
// pending, its subject has no leased run and no older queued run, and it passes the
// claim's filters.
const sqliteEligible = `r.CancelRequestedAt IS NULL
    AND EXISTS (SELECT 1 FROM Projects p WHERE p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId AND p.Active = 1)
    AND NOT EXISTS (SELECT 1 FROM Runs s WHERE s.TenantId = r.TenantId AND s.Subject = r.Subject AND s.State = 1)
    AND NOT EXISTS (SELECT 1 FROM Runs s WHERE s.TenantId = r.TenantId AND s.Subject = r.Subject AND s.State = 0
        AND (s.QueuedAt < r.QueuedAt OR (s.QueuedAt = r.QueuedAt AND s.RunId < r.RunId)))
    AND (?5 IS NULL OR r.Kind IN (SELECT value FROM json_each(?5)))
    AND (?6 IS NULL OR r.AgentId IN (SELECT value FROM json_each(?6)))
    AND (?7 IS NULL OR r.ProjectId IN (SELECT value FROM json_each(?7)))
    AND (?8 IS NULL OR r.RunId <> ?8)`

// sqliteSeek is one index seek of IX_Runs_Claim: the window's oldest eligible runs of a band.
func sqliteSeek(band, dueBy string) string {
	return `SELECT r.RunId, r.ProjectId, r.DueAt FROM Runs r
    WHERE r.TenantId = ?1 AND r.State = 0 AND r.Band = ` + band + ` AND r.DueAt <= ` + dueBy + `
    AND ` + sqliteEligible + `
    ORDER BY r.DueAt, r.RunId LIMIT ?4`
}

// sqliteClaim weighs the window by project load: fewest leased runs, then age.
func sqliteClaim(seeks ...string) string {
	parts := make([]string, len(seeks))
	for i, s := range seeks {
		parts[i] = "SELECT * FROM (" + s + ")"
	}
	return `SELECT c.RunId FROM (
    SELECT * FROM (` + strings.Join(parts, "\n    UNION ALL\n    ") + `) ORDER BY DueAt, RunId LIMIT ?4
) c JOIN Projects p ON p.TenantId = ?1 AND p.ProjectId = c.ProjectId
ORDER BY p.LeasedCount, c.DueAt, c.RunId LIMIT 1`
}

var sqliteQueries = queries{
	insert: `INSERT INTO Runs (RunId, TenantId, ProjectId, EnvironmentId, Subject, Kind, AgentId, StepId, SnapshotId, Input,
    Band, State, Epoch, Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, DeadlineAt, IdempotencyKey, ParentRunId,
    Depth, ContinuedFromRunId, CreatedBy, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ` + sqliteStamp + `)`,
	get:           `SELECT ` + runColumns + ` FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	lock:          `SELECT ` + runColumns + ` FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	byIdempotency: `SELECT ` + runColumns + ` FROM Runs WHERE TenantId = ?1 AND IdempotencyKey = ?2`,
	continuation:  `SELECT ` + runColumns + ` FROM Runs WHERE TenantId = ?1 AND ContinuedFromRunId = ?2`,
	projectActive: `SELECT Active FROM Projects WHERE TenantId = ?1 AND ProjectId = ?2`,
	tombstone:     `SELECT RunId, PurgedAt FROM IdempotencyTombstones WHERE TenantId = ?1 AND IdempotencyKey = ?2`,
	lockTenant:    `SELECT MaxLeasedRuns FROM Tenants WHERE TenantId = ?1`,
	countLeased:   `SELECT COUNT(*) FROM Runs WHERE TenantId = ?1 AND State = 1`,
	claimCandidates: [3]string{
		sqliteClaim(sqliteSeek("0", "?2")),
		sqliteClaim(sqliteSeek("1", "?2"), sqliteSeek("2", "?3")),
		sqliteClaim(sqliteSeek("2", "?2")),
	},
	lease: `UPDATE Runs SET State = 1, Epoch = Epoch + 1, HolderId = ?3, LeaseSeconds = ?4, LeasedUntil = ?5,
    Version = ` + sqliteStamp + `
WHERE TenantId = ?1 AND RunId = ?2 AND State = 0`,
	projectLeased: `UPDATE Projects SET LeasedCount = LeasedCount + ?3, Version = ` + sqliteStamp + `
WHERE TenantId = ?1 AND ProjectId = ?2`,
	heartbeat: `UPDATE Runs SET LeasedUntil = ?3, LeaseSeconds = ?4, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1`,
	requeue: `UPDATE Runs SET State = 0, DueAt = ?3, Attempt = ?4, LeasedUntil = NULL, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?5 IS NULL OR LeasedUntil < ?5)`,
	endLeased: `UPDATE Runs SET State = 2, Outcome = ?3, EndedAt = ?4, Attempt = ?5, LeasedUntil = NULL,
    Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?6 IS NULL OR LeasedUntil < ?6)`,
	endQueued: `UPDATE Runs SET State = 2, Outcome = ?2, EndedAt = ?3, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND State = 0`,
	requestCancel: `UPDATE Runs SET CancelRequestedAt = ?2, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND State = 1 AND CancelRequestedAt IS NULL`,
	list: `SELECT ` + runColumns + ` FROM Runs
WHERE TenantId = ?1 AND (?2 IS NULL OR State = ?2) AND (?3 IS NULL OR Subject = ?3) AND (?4 IS NULL OR ProjectId = ?4)
    AND (?5 IS NULL OR Kind = ?5) AND (?9 IS NULL OR AgentId = ?9) AND (?10 IS NULL OR QueuedAt >= ?10)
    AND (?6 IS NULL OR QueuedAt < ?6 OR (QueuedAt = ?6 AND RunId < ?7))
ORDER BY QueuedAt DESC, RunId DESC LIMIT ?8`,
	expiredLeases: `SELECT RunId, TenantId, Epoch FROM Runs WHERE State = 1 AND LeasedUntil < ?1 ORDER BY LeasedUntil LIMIT ?2`,
	overdueQueued: `SELECT RunId, TenantId FROM Runs WHERE State = 0 AND DeadlineAt IS NOT NULL AND DeadlineAt < ?1
ORDER BY DeadlineAt LIMIT ?2`,

	getLock: `SELECT TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt FROM TaskRunLocks
WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
	insertLock: `INSERT INTO TaskRunLocks (TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)`,
	updateLock: `UPDATE TaskRunLocks SET HolderId = ?4, HeldUntil = ?5, UpdatedAt = ?6
WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
	deleteLock: `DELETE FROM TaskRunLocks WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
}
