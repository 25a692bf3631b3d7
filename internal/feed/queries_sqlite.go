package feed

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// The SQLite query set. Writers are serial (one write transaction at a time, BEGIN
// IMMEDIATE), so the runner's transaction holds the projector's row alone and every version
// the counter has handed out is committed or part of this very group commit, which commits
// or rolls back with the projection.
var sqliteQueries = queries{
	ensure: `INSERT INTO FeedProjectors (Name, Position, UpdatedAt) VALUES (?1, 0, ?2) ON CONFLICT (Name) DO NOTHING`,

	lease: `UPDATE FeedProjectors SET Holder = ?2, LeaseUntil = ?4
WHERE Name = ?1 AND (Holder = ?2 OR Holder IS NULL OR LeaseUntil IS NULL OR LeaseUntil < ?3)`,

	position: `SELECT Position FROM FeedProjectors WHERE Name = ?1`,

	ceiling: `SELECT Value + 1 FROM RowVersionCounter WHERE Id = 1`,

	advance: `UPDATE FeedProjectors SET Position = ?2, CaughtUpAt = COALESCE(?3, CaughtUpAt), UpdatedAt = ?4 WHERE Name = ?1`,

	advanceFrom: `UPDATE FeedProjectors SET Position = ?2, CaughtUpAt = COALESCE(?3, CaughtUpAt), UpdatedAt = ?4
WHERE Name = ?1 AND Position = ?5 AND Holder = ?6`,

	statuses: `SELECT Name, Position, CaughtUpAt FROM FeedProjectors ORDER BY Name`,
}
