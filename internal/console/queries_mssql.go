package console

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of console sessions. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. A duplicate SessionHash (32 random
// bytes) would be 2627, answered as a failed sign-in.

var mssqlQueries = queries{
	// insert: a new PK_ConsoleSessions key; the FK check seeks PK_Tenants.
	insert: `INSERT INTO dbo.ConsoleSessions (TenantId, SessionHash, KeyId, CreatedAt, ExpiresAt)
VALUES (@p1, @p2, @p3, @p4, @p5);`,
	// get: PK seek, then the key's PK seek. 0 rows: no, expired or revoked session alike.
	get: `SELECT s.KeyId, k.Role, s.ExpiresAt FROM dbo.ConsoleSessions s
JOIN dbo.ApiKeys k ON k.KeyId = s.KeyId AND k.TenantId = s.TenantId
WHERE s.TenantId = @p1 AND s.SessionHash = @p2 AND s.ExpiresAt > @p3 AND k.RevokedAt IS NULL;`,
	// delete: PK seek. 0 rows: signed out already.
	delete: `DELETE FROM dbo.ConsoleSessions WHERE TenantId = @p1 AND SessionHash = @p2;`,
	// deleteExpired: IX_ConsoleSessions_Expires seek, at most 100 rows; READPAST so sign-ins
	// never queue on each other's clean-up (with ROWLOCK and READCOMMITTEDLOCK, as the claim).
	deleteExpired: `DELETE TOP (100) FROM dbo.ConsoleSessions WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE TenantId = @p1 AND ExpiresAt <= @p2
OPTION (MAXDOP 1);`,
}
