package tenancy

var mssqlQueries = queries{
	// UPDLOCK, HOLDLOCK: two CLIs creating the same tenant at once serialise on the key
	// range instead of one failing with 2627.
	ensureTenant: `IF NOT EXISTS (SELECT 1 FROM dbo.Tenants WITH (UPDLOCK, HOLDLOCK) WHERE TenantId = @p1)
INSERT INTO dbo.Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (@p1, @p2, @p3);`,
	insertKey: `INSERT INTO dbo.ApiKeys (KeyId, TenantId, Role, SecretHash, CreatedAt) VALUES (@p1, @p2, @p3, @p4, @p5);`,
	listKeys: `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt FROM dbo.ApiKeys
WHERE @p1 = N'' OR TenantId = @p1 ORDER BY TenantId, CreatedAt, KeyId;`,
	revokeKey:    `UPDATE dbo.ApiKeys SET RevokedAt = COALESCE(RevokedAt, @p2) WHERE KeyId = @p1;`,
	setMaxLeased: `UPDATE dbo.Tenants SET MaxLeasedRuns = @p2 WHERE TenantId = @p1;`,
	getTenant:    `SELECT TenantId, MaxLeasedRuns, CreatedAt FROM dbo.Tenants WHERE TenantId = @p1;`,
	countTenants: `SELECT COUNT(*) FROM dbo.Tenants;`,
	getKey:       `SELECT KeyId, TenantId, Role, CreatedAt, RevokedAt, SecretHash FROM dbo.ApiKeys WHERE KeyId = @p1;`,
}
