package overview

// Reading checks. These statements only read, under the transaction's READ COMMITTED: with
// READ_COMMITTED_SNAPSHOT on they read a consistent image and take no locks; without it,
// short shared locks, released row by row, so they never hold up a claim for longer than
// one row's read. None raises an error of its own (0 rows: an empty result, which reads as
// zero). The literals State = 0 / State = 1 and Status = N'pending' match the filtered
// indexes' filters exactly (a parameter would not match them). Attempt state 4 is lost.
var mssqlQueries = queries{
	// queued: a seek of IX_Runs_SubjectQueue on TenantId (filtered State = 0, the literal
	// matches; since migration 000011 its INCLUDE covers ProjectId, Band and DueAt, which
	// IX_Runs_Claim did before it was narrowed to the subject heads), reading the tenant's
	// queued runs only, no lookups. Hash or sort aggregate on (ProjectId, Band): the work is
	// the tenant's queue, not the table.
	queued: `SELECT ProjectId, Band, COUNT_BIG(*) AS Runs, MIN(CASE WHEN DueAt <= @p2 THEN DueAt END) AS OldestDue
FROM dbo.Runs WHERE TenantId = @p1 AND State = 0 GROUP BY ProjectId, Band;`,
	// leased: a seek of UX_Runs_LeasedSubject on TenantId (filtered State = 1), a PK_Runs
	// lookup per leased run for ProjectId and Band: bounded by the tenant's budget
	// (MaxLeasedRuns), since a claim past it leases nothing.
	leased: `SELECT ProjectId, Band, COUNT_BIG(*) AS Runs FROM dbo.Runs
WHERE TenantId = @p1 AND State = 1 GROUP BY ProjectId, Band;`,
	// lost: a seek of IX_Attempts_Tenant_State on (TenantId, State = 4), a PK lookup per
	// lost attempt for EndedAt and ProjectId: the tenant's lost attempts kept by
	// retention, a small share of its attempts. (An index on (TenantId, State, EndedAt)
	// would bound it to the hour; it needs a migration.)
	lost: `SELECT ProjectId, COUNT_BIG(*) AS Runs FROM dbo.ExecutionAttempts
WHERE TenantId = @p1 AND State = 4 AND EndedAt >= @p2 GROUP BY ProjectId;`,
	// pending: a seek of IX_Decisions_Tenant_Status on (TenantId, N'pending'), a PK lookup
	// for AttemptId and ExpiresAt, then a PK_ExecutionAttempts seek per decision: bounded
	// by the tenant's pending decisions (an ending attempt closes its own).
	pending: `SELECT a.ProjectId, COUNT_BIG(*) AS Runs FROM dbo.DecisionRequests d
JOIN dbo.ExecutionAttempts a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
WHERE d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p2)
GROUP BY a.ProjectId;`,
	// budget: PK_Tenants seek. 0 rows -> ErrNotFound (the store reads it as no tenant).
	budget: `SELECT MaxLeasedRuns FROM dbo.Tenants WHERE TenantId = @p1;`,

	// allQueued (maintenance scope, metrics): a scan of IX_Runs_SubjectQueue, which holds
	// queued runs only and covers Band and DueAt (migration 000011), in (TenantId, Subject)
	// order: a hash aggregate on (TenantId, Band), or a sort of the groups. It reads every
	// queued run once per scrape cache period, never ended history.
	// OPTION (MAXDOP 1): a wide, maintenance-scope read (TSQL.md, SESSION_CONTEXT).
	allQueued: `SELECT TenantId, Band, COUNT_BIG(*) AS Runs, MIN(CASE WHEN DueAt <= @p1 THEN DueAt END) AS OldestDue
FROM dbo.Runs WHERE State = 0 GROUP BY TenantId, Band OPTION (MAXDOP 1);`,
	// allLeased: an ordered scan of UX_Runs_LeasedSubject (leased runs only, bounded by
	// the sum of the budgets) with PK lookups for Band. OPTION (MAXDOP 1) as above.
	allLeased: `SELECT TenantId, Band, COUNT_BIG(*) AS Runs FROM dbo.Runs
WHERE State = 1 GROUP BY TenantId, Band OPTION (MAXDOP 1);`,
	// allPending: a scan of PK_Tenants (one row per tenant) and, per tenant, a seek of
	// IX_Decisions_Tenant_Status on (TenantId, N'pending'): never the closed decisions.
	// OPTION (MAXDOP 1) as above.
	allPending: `SELECT t.TenantId, x.Runs FROM dbo.Tenants t
CROSS APPLY (SELECT COUNT_BIG(*) AS Runs FROM dbo.DecisionRequests d
    WHERE d.TenantId = t.TenantId AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p1)) x
OPTION (MAXDOP 1);`,
}
