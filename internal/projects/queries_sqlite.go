package projects

var sqliteQueries = queries{
	get: `SELECT TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt, Version
FROM Projects WHERE TenantId = ?1 AND ProjectId = ?2`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insert: `INSERT INTO Projects (TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, ?3, ?4, 0, ?5, ?5, (SELECT Value + 1 FROM RowVersionCounter))`,
	update: `UPDATE Projects SET Active = ?3, RetentionDays = ?4, UpdatedAt = ?5,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ProjectId = ?2 AND Version = ?6`,
	list: `SELECT TenantId, ProjectId, Active, RetentionDays, LeasedCount, CreatedAt, UpdatedAt, Version
FROM Projects WHERE TenantId = ?1 AND ProjectId > ?2 ORDER BY ProjectId LIMIT ?3`,
}
