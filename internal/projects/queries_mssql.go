package projects

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the project store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.Projects has no trigger;
// PK_Projects (TenantId, ProjectId) is clustered.

// mssqlLeasedCount: the project's counter row (PK_ProjectLeases seek; no row counts 0), kept
// out of Projects so a claim does not change the project's rowversion, its ETag.
const mssqlLeasedCount = `COALESCE((SELECT l.LeasedCount FROM dbo.ProjectLeases AS l
    WHERE l.TenantId = p.TenantId AND l.ProjectId = p.ProjectId), 0) AS LeasedCount`

// mssqlCostToday: the project's cost counter of the day (PK_ProjectDailyCosts seek; no row
// is 0). The day argument is 'YYYY-MM-DD', converted to date (date ranks above nvarchar).
func mssqlCostToday(dayArg string) string {
	return `p.DailyCostBudgetMicros, COALESCE((SELECT c.CostMicros FROM dbo.ProjectDailyCosts AS c
    WHERE c.TenantId = p.TenantId AND c.ProjectId = p.ProjectId AND c.Day = ` + dayArg + `), 0) AS CostTodayMicros`
}

var mssqlQueries = queries{
	// get: PK seek. 0 rows: no such project.
	get: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version,
    ` + mssqlCostToday("@p3") + `
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId = @p2;`,
	// insert: after get found no row. Two creates of one project: the second gets 2627 ->
	// ConflictError, which Put answers precondition_required.
	insert: `INSERT INTO dbo.Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt, DailyCostBudgetMicros)
VALUES (@p1, @p2, @p3, @p4, @p5, @p5, @p6);`,
	// update: conditional on the version If-Match matched (0 rows: precondition_failed). A purge
	// holding the row (retention's lockMembers) is waited for.
	update: `UPDATE dbo.Projects SET Active = @p3, RetentionDays = @p4, UpdatedAt = @p5, DailyCostBudgetMicros = @p7
WHERE TenantId = @p1 AND ProjectId = @p2 AND Version = @p6;`,
	// list: PK range after @p2 in key order, TOP (@p3).
	list: `SELECT TOP (@p3) p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version,
    ` + mssqlCostToday("@p4") + `
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId > @p2 ORDER BY p.ProjectId
OPTION (MAXDOP 1);`,
}
