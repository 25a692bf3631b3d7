package tenancy

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of tenants and API keys. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. The CLI's listings run in
// maintenance scope.

var mssqlQueries = queries{
	// ensureTenant: UPDLOCK, HOLDLOCK: two CLIs creating one tenant serialise on the key range
	// instead of one failing with 2627.
	ensureTenant: `IF NOT EXISTS (SELECT 1 FROM dbo.Tenants WITH (UPDLOCK, HOLDLOCK) WHERE TenantId = @p1)
INSERT INTO dbo.Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (@p1, @p2, @p3);`,
	insertKey: `INSERT INTO dbo.ApiKeys (KeyId, TenantId, Role, SecretHash, CreatedAt, Label) VALUES (@p1, @p2, @p3, @p4, @p5, @p6);`,
	// listKeys: IX_ApiKeys_Tenant for one tenant, or PK_ApiKeys and a sort for all.
	listKeys: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt FROM dbo.ApiKeys
WHERE @p1 = N'' OR TenantId = @p1 ORDER BY TenantId, CreatedAt, KeyId
OPTION (MAXDOP 1);`,
	revokeKey:    `UPDATE dbo.ApiKeys SET RevokedAt = COALESCE(RevokedAt, @p2) WHERE KeyId = @p1;`,
	setMaxLeased: `UPDATE dbo.Tenants SET MaxLeasedRuns = @p2 WHERE TenantId = @p1;`,
	getTenant:    `SELECT TenantId, MaxLeasedRuns, CreatedAt FROM dbo.Tenants WHERE TenantId = @p1;`,
	countTenants: `SELECT COUNT(*) FROM dbo.Tenants OPTION (MAXDOP 1);`,
	// listTenants: PK_Tenants in order; per tenant a UX_Runs_LeasedSubject seek (State = 1).
	listTenants: `SELECT t.TenantId, t.MaxLeasedRuns, t.CreatedAt,
(SELECT COUNT(*) FROM dbo.Runs r WHERE r.TenantId = t.TenantId AND r.State = 1) AS LeasedRuns
FROM dbo.Tenants t ORDER BY t.TenantId
OPTION (MAXDOP 1);`,
	getKey: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, Label, LastUsedAt, SecretHash FROM dbo.ApiKeys WHERE KeyId = @p1;`,
	// touchKey (authentication, maintenance scope, at most once a minute per key): a seek
	// of PK_ApiKeys and a one-row update; the predicate on LastUsedAt makes two replicas
	// recording the same minute write once. 0 rows: the key was recorded meanwhile.
	touchKey: `UPDATE dbo.ApiKeys SET LastUsedAt = @p2 WHERE KeyId = @p1 AND (LastUsedAt IS NULL OR LastUsedAt < @p3);`,
	// liveKeyIDs (the key cache's refresh, maintenance scope): a scan of ApiKeys, every
	// tenant's keys; a serial plan, as every range read (SESSION_CONTEXT, TSQL.md).
	liveKeyIDs: `SELECT KeyId FROM dbo.ApiKeys WHERE RevokedAt IS NULL OPTION (MAXDOP 1);`,
}
