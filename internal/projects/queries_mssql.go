package projects

// mssqlLeasedCount reads the project's leased count from its counter row (migrations
// 000011: the count left Projects so a claim does not change the project's rowversion,
// its ETag). Reading check: PK_ProjectLeases seek per project row, no hints: under RCSI
// the last committed count; without RCSI a short S lock that waits for a claim or an
// unlease of the project in flight. No row counts 0.
const mssqlLeasedCount = `COALESCE((SELECT l.LeasedCount FROM dbo.ProjectLeases AS l
    WHERE l.TenantId = p.TenantId AND l.ProjectId = p.ProjectId), 0) AS LeasedCount`

var mssqlQueries = queries{
	// get: PK_Projects seek, then PK_ProjectLeases (above). 0 rows -> ErrNotFound.
	get: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId = @p2;`,
	insert: `INSERT INTO dbo.Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p5);`,
	update: `UPDATE dbo.Projects SET Active = @p3, RetentionDays = @p4, UpdatedAt = @p5
WHERE TenantId = @p1 AND ProjectId = @p2 AND Version = @p6;`,
	// list: PK_Projects range seek from @p2 in key order, TOP (@p3); a PK_ProjectLeases seek
	// per row. 0 rows -> an empty page.
	list: `SELECT TOP (@p3) p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId > @p2 ORDER BY p.ProjectId;`,
}
