package tenancy

var mssqlQueries = queries{
	// UPDLOCK, HOLDLOCK: two CLIs creating the same tenant at once serialise on the key
	// range instead of one failing with 2627.
	ensureTenant: `IF NOT EXISTS (SELECT 1 FROM dbo.Tenants WITH (UPDLOCK, HOLDLOCK) WHERE TenantId = @p1)
INSERT INTO dbo.Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (@p1, @p2, @p3);`,
	insertKey: `INSERT INTO dbo.ApiKeys (KeyId, TenantId, Role, SecretHash, CreatedAt, Label) VALUES (@p1, @p2, @p3, @p4, @p5, @p6);`,
	// listKeys, countTenants (the CLI, maintenance scope): every key or every tenant, so
	// OPTION (MAXDOP 1), as every wide maintenance-scope read (TSQL.md: SESSION_CONTEXT in a
	// parallel plan). listKeys seeks IX_ApiKeys_Tenant for one tenant, or scans PK_ApiKeys
	// and sorts for all; countTenants scans PK_Tenants. Under RCSI no locks; without it
	// short S locks. 0 rows: an empty list, a zero count.
	listKeys: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt FROM dbo.ApiKeys
WHERE @p1 = N'' OR TenantId = @p1 ORDER BY TenantId, CreatedAt, KeyId
OPTION (MAXDOP 1);`,
	revokeKey:    `UPDATE dbo.ApiKeys SET RevokedAt = COALESCE(RevokedAt, @p2) WHERE KeyId = @p1;`,
	setMaxLeased: `UPDATE dbo.Tenants SET MaxLeasedRuns = @p2 WHERE TenantId = @p1;`,
	getTenant:    `SELECT TenantId, MaxLeasedRuns, CreatedAt FROM dbo.Tenants WHERE TenantId = @p1;`,
	countTenants: `SELECT COUNT(*) FROM dbo.Tenants OPTION (MAXDOP 1);`,
	// Reading check (an operator's CLI listing, not a request path): scans Tenants (small)
	// by its key in order; per tenant the count seeks UX_Runs_LeasedSubject (TenantId,
	// Subject) WHERE State = 1, whose filter the literal State = 1 matches, so only leased
	// rows are read. Under READ_COMMITTED_SNAPSHOT it reads committed versions and takes
	// no shared locks, so claims are never blocked; the count is a snapshot that may be
	// stale the moment it returns, which a listing may be. 0 tenants: no rows. No error
	// numbers beyond the connection's own. MAXDOP 1: a maintenance-scope read under
	// SESSION_CONTEXT (TSQL.md).
	listTenants: `SELECT t.TenantId, t.MaxLeasedRuns, t.CreatedAt,
(SELECT COUNT(*) FROM dbo.Runs r WHERE r.TenantId = t.TenantId AND r.State = 1) AS LeasedRuns
FROM dbo.Tenants t ORDER BY t.TenantId
OPTION (MAXDOP 1);`,
	getKey: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt, SecretHash FROM dbo.ApiKeys WHERE KeyId = @p1;`,
	// touchKey (authentication, maintenance scope, at most once a minute per key): a seek
	// of PK_ApiKeys and a one-row update; the predicate on LastUsedAt makes two replicas
	// recording the same minute write once. 0 rows: the key was recorded meanwhile.
	touchKey: `UPDATE dbo.ApiKeys SET LastUsedAt = @p2 WHERE KeyId = @p1 AND (LastUsedAt IS NULL OR LastUsedAt < @p3);`,
}
