package console

// Reading checks. Every statement runs in its tenant's scope (row-level security filters
// and blocks on the same TenantId the statement names). Errors: 1205 -> ErrRetryable
// (retried by sqldb); no other error is expected (a duplicate SessionHash of 32 random
// bytes would be 2627 -> *ConflictError, answered as a failed sign-in).
var mssqlQueries = queries{
	// insert: PK_ConsoleSessions insert (X lock on the new key), FK check seeks PK_Tenants.
	insert: `INSERT INTO dbo.ConsoleSessions (TenantId, SessionHash, KeyId, CreatedAt, ExpiresAt)
VALUES (@p1, @p2, @p3, @p4, @p5);`,
	// get: a PK_ConsoleSessions seek on (TenantId, SessionHash), then a PK_ApiKeys seek on
	// KeyId. Read only: under RCSI no locks, otherwise short S locks. 0 rows ->
	// ErrNotFound (no, expired or revoked session: the same answer).
	get: `SELECT s.KeyId, k.Role, s.ExpiresAt FROM dbo.ConsoleSessions s
JOIN dbo.ApiKeys k ON k.KeyId = s.KeyId AND k.TenantId = s.TenantId
WHERE s.TenantId = @p1 AND s.SessionHash = @p2 AND s.ExpiresAt > @p3 AND k.RevokedAt IS NULL;`,
	// delete: a PK_ConsoleSessions seek, X lock on that row only. 0 rows is fine (signed
	// out already).
	delete: `DELETE FROM dbo.ConsoleSessions WHERE TenantId = @p1 AND SessionHash = @p2;`,
	// deleteExpired: a seek of IX_ConsoleSessions_Expires on (TenantId, ExpiresAt <= @p2),
	// at most 100 rows (no lock escalation), READPAST so sign-ins never queue on each
	// other's clean-up. READPAST is refused (Msg 650) under READ COMMITTED when the database
	// has READ_COMMITTED_SNAPSHOT on (Azure SQL's default, and what the README recommends)
	// unless READCOMMITTEDLOCK is named with it (the table hints reference, READPAST): without
	// it every sign-in failed there. ROWLOCK keeps the locks READPAST can skip row locks
	// (it does not skip page locks). A DELETE finds its rows with U locks under RCSI too, so
	// READCOMMITTEDLOCK changes nothing else. 0 rows is the usual case. Errors: 1205 ->
	// ErrRetryable.
	deleteExpired: `DELETE TOP (100) FROM dbo.ConsoleSessions WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE TenantId = @p1 AND ExpiresAt <= @p2;`,
}
