package projects

// leasedCount reads the project's leased count from its counter row (migrations 000011:
// the count left Projects so a claim does not change the project's Version); no row is 0.
const sqliteLeasedCount = `COALESCE((SELECT l.LeasedCount FROM ProjectLeases l
    WHERE l.TenantId = p.TenantId AND l.ProjectId = p.ProjectId), 0) AS LeasedCount`

var sqliteQueries = queries{
	get: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + sqliteLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM Projects p WHERE p.TenantId = ?1 AND p.ProjectId = ?2`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insert: `INSERT INTO Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?5, (SELECT Value + 1 FROM RowVersionCounter))`,
	update: `UPDATE Projects SET Active = ?3, RetentionDays = ?4, UpdatedAt = ?5,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ProjectId = ?2 AND Version = ?6`,
	list: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + sqliteLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM Projects p WHERE p.TenantId = ?1 AND p.ProjectId > ?2 ORDER BY p.ProjectId LIMIT ?3`,
}
