package tenancy

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

var sqliteQueries = queries{
	ensureTenant: `INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt)
VALUES (?1, ?2, ?3) ON CONFLICT (TenantId) DO NOTHING`,
	insertKey: `INSERT INTO ApiKeys (KeyId, TenantId, Role, SecretHash, CreatedAt, Label) VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
	listKeys: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt FROM ApiKeys
WHERE ?1 = '' OR TenantId = ?1 ORDER BY TenantId, CreatedAt, KeyId`,
	revokeKey:    `UPDATE ApiKeys SET RevokedAt = COALESCE(RevokedAt, ?2) WHERE KeyId = ?1`,
	setMaxLeased: `UPDATE Tenants SET MaxLeasedRuns = ?2 WHERE TenantId = ?1`,
	getTenant:    `SELECT TenantId, MaxLeasedRuns, CreatedAt FROM Tenants WHERE TenantId = ?1`,
	countTenants: `SELECT COUNT(*) FROM Tenants`,
	listTenants: `SELECT t.TenantId, t.MaxLeasedRuns, t.CreatedAt,
(SELECT COUNT(*) FROM Runs r WHERE r.TenantId = t.TenantId AND r.State = 1) AS LeasedRuns
FROM Tenants t ORDER BY t.TenantId`,
	getKey:     `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt, SecretHash FROM ApiKeys WHERE KeyId = ?1`,
	touchKey:   `UPDATE ApiKeys SET LastUsedAt = ?2 WHERE KeyId = ?1 AND (LastUsedAt IS NULL OR LastUsedAt < ?3)`,
	liveKeyIDs: `SELECT KeyId FROM ApiKeys WHERE RevokedAt IS NULL`,
}
