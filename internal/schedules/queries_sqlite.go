package schedules

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

const sqliteColumns = `s.TenantId, s.ScheduleId, s.Cron, s.Timezone, s.RunSpec, s.Overlap, s.CatchupSeconds, s.Paused,
    s.Description, s.CreatedAt, s.UpdatedAt, s.UpdatedBy, s.Version, st.NextFireAt, st.LastFireAt, st.LastRunId, st.Fired,
    st.SkippedOverlap, st.SkippedCatchup`

var sqliteQueries = queries{
	get: `SELECT ` + sqliteColumns + ` FROM Schedules s JOIN ScheduleStates st ON st.TenantId = s.TenantId AND st.ScheduleId = s.ScheduleId
WHERE s.TenantId = ?1 AND s.ScheduleId = ?2`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insert: `INSERT INTO Schedules (TenantId, ScheduleId, Cron, Timezone, RunSpec, Overlap, CatchupSeconds, Paused, Description,
    CreatedAt, UpdatedAt, UpdatedBy, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, (SELECT Value + 1 FROM RowVersionCounter))`,
	insertState: `INSERT INTO ScheduleStates (TenantId, ScheduleId, NextFireAt, Fired, SkippedOverlap, SkippedCatchup)
VALUES (?1, ?2, ?3, 0, 0, 0)`,
	update: `UPDATE Schedules SET Cron = ?3, Timezone = ?4, RunSpec = ?5, Overlap = ?6, CatchupSeconds = ?7, Paused = ?8,
    Description = ?9, UpdatedAt = ?10, UpdatedBy = ?11, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ScheduleId = ?2 AND Version = ?12`,
	reschedule: `UPDATE ScheduleStates SET NextFireAt = ?3 WHERE TenantId = ?1 AND ScheduleId = ?2`,
	list: `SELECT ` + sqliteColumns + ` FROM Schedules s JOIN ScheduleStates st ON st.TenantId = s.TenantId AND st.ScheduleId = s.ScheduleId
WHERE s.TenantId = ?1 AND s.ScheduleId > ?2 ORDER BY s.ScheduleId LIMIT ?3`,
	project:     `SELECT COUNT(*) FROM Projects WHERE TenantId = ?1 AND ProjectId = ?2`,
	deleteState: `DELETE FROM ScheduleStates WHERE TenantId = ?1 AND ScheduleId = ?2`,
	delete:      `DELETE FROM Schedules WHERE TenantId = ?1 AND ScheduleId = ?2`,
	firings: `SELECT RunId, IdempotencyKey FROM Runs
WHERE TenantId = ?1 AND IdempotencyKey > ?2 AND IdempotencyKey < ?3 ORDER BY IdempotencyKey DESC LIMIT ?4`,
	due: `SELECT TenantId, ScheduleId, NextFireAt FROM ScheduleStates
WHERE NextFireAt IS NOT NULL AND NextFireAt <= ?1 ORDER BY NextFireAt LIMIT ?2`,
	advance: `UPDATE ScheduleStates SET NextFireAt = ?4, SkippedCatchup = SkippedCatchup + ?5, SkippedOverlap = SkippedOverlap + ?6,
    Fired = Fired + ?7, LastFireAt = COALESCE(?8, LastFireAt)
WHERE TenantId = ?1 AND ScheduleId = ?2 AND NextFireAt = ?3`,
	setLastRun: `UPDATE ScheduleStates SET LastRunId = ?3 WHERE TenantId = ?1 AND ScheduleId = ?2`,
}
