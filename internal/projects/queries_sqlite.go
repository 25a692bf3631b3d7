package projects

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// leasedCount reads the project's leased count from its counter row (migrations 000011:
// the count left Projects so a claim does not change the project's Version); no row is 0.
const sqliteLeasedCount = `COALESCE((SELECT l.LeasedCount FROM ProjectLeases l
    WHERE l.TenantId = p.TenantId AND l.ProjectId = p.ProjectId), 0) AS LeasedCount`

// sqliteCostToday reads the project's cost counter of the day (argument dayArg); no row is 0.
func sqliteCostToday(dayArg string) string {
	return `p.DailyCostBudgetMicros, COALESCE((SELECT c.CostMicros FROM ProjectDailyCosts c
    WHERE c.TenantId = p.TenantId AND c.ProjectId = p.ProjectId AND c.Day = ` + dayArg + `), 0) AS CostTodayMicros`
}

// sqliteTimes are the project's times as text, which the scan parses (sqldb.ParseTimeText)
// instead of the driver.
const sqliteTimes = `CAST(p.CreatedAt AS TEXT) AS CreatedAt, CAST(p.UpdatedAt AS TEXT) AS UpdatedAt`

var sqliteQueries = queries{
	get: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + sqliteLeasedCount + `, ` + sqliteTimes + `, p.Version,
    ` + sqliteCostToday("?3") + `
FROM Projects p WHERE p.TenantId = ?1 AND p.ProjectId = ?2`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insert: `INSERT INTO Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt, Version, DailyCostBudgetMicros)
VALUES (?1, ?2, ?3, ?4, ?5, ?5, (SELECT Value + 1 FROM RowVersionCounter), ?6)`,
	update: `UPDATE Projects SET Active = ?3, RetentionDays = ?4, UpdatedAt = ?5, DailyCostBudgetMicros = ?7,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ProjectId = ?2 AND Version = ?6`,
	list: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + sqliteLeasedCount + `, ` + sqliteTimes + `, p.Version,
    ` + sqliteCostToday("?4") + `
FROM Projects p WHERE p.TenantId = ?1 AND p.ProjectId > ?2 ORDER BY p.ProjectId LIMIT ?3`,
}
