package projects

var mssqlQueries = queries{
	get: `SELECT TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt, Version
FROM dbo.Projects WHERE TenantId = @p1 AND ProjectId = @p2;`,
	insert: `INSERT INTO dbo.Projects (TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, 0, @p5, @p5);`,
	update: `UPDATE dbo.Projects SET Active = @p3, RetentionDays = @p4, UpdatedAt = @p5
WHERE TenantId = @p1 AND ProjectId = @p2 AND Version = @p6;`,
	list: `SELECT TOP (@p3) TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt, Version
FROM dbo.Projects WHERE TenantId = @p1 AND ProjectId > @p2 ORDER BY ProjectId;`,
}
