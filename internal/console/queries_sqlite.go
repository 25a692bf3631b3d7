package console

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

var sqliteQueries = queries{
	insert: `INSERT INTO ConsoleSessions (TenantId, SessionHash, KeyId, CreatedAt, ExpiresAt) VALUES (?1, ?2, ?3, ?4, ?5)`,
	get: `SELECT s.KeyId, k.Role, s.ExpiresAt FROM ConsoleSessions s
JOIN ApiKeys k ON k.KeyId = s.KeyId AND k.TenantId = s.TenantId
WHERE s.TenantId = ?1 AND s.SessionHash = ?2 AND s.ExpiresAt > ?3 AND k.RevokedAt IS NULL`,
	delete: `DELETE FROM ConsoleSessions WHERE TenantId = ?1 AND SessionHash = ?2`,
	deleteExpired: `DELETE FROM ConsoleSessions WHERE rowid IN (
    SELECT rowid FROM ConsoleSessions WHERE TenantId = ?1 AND ExpiresAt <= ?2 LIMIT 100)`,
}
