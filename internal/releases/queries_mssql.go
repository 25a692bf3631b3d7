package releases

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the release store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.LoadedReleases has no trigger.
//
// PK_LoadedReleases (ReleaseId, AdapterVersion) is clustered and has no TenantId (a release
// id is global, the seed's key): every access seeks the pair and checks TenantId as a
// residual. Lock order: the release row first (lock), then each running attempt (U) and its
// run (U). A claim takes the tenant row, then the release row (CheckClaim), then queued
// runs; no writer holds an attempt or run while it asks for a release row.

var mssqlQueries = queries{
	// get: PK seek. 0 rows: missing or another tenant's.
	get: `SELECT ` + columns + ` FROM dbo.LoadedReleases WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1;`,

	// lock: get with a U lock held to commit: the first lock of Put and the only lock of a
	// claim's CheckClaim, so a transition and a claim naming the release serialise. A missing
	// key holds nothing (the insert's PK guards two creates). Uncertain: on another tenant's row
	// the U lock may be kept to this short transaction's end, depending on where the plan
	// checks TenantId; that only delays that tenant's writers of the key.
	lock: `SELECT ` + columns + ` FROM dbo.LoadedReleases WITH (UPDLOCK, ROWLOCK)
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1;`,

	// insert: 2627 on PK_LoadedReleases (this tenant's concurrent create, or another tenant's
	// row, hidden by RLS) -> ConflictError; the transaction stays usable and Put re-reads.
	insert: `INSERT INTO dbo.LoadedReleases (ReleaseId, AdapterVersion, TenantId, ManifestHash, ContentRefsJson, State,
    VerifiedAt, InFlightPolicy)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8);`,

	// update: PK seek under lock's U lock. 0 rows: Put answers precondition_failed.
	update: `UPDATE dbo.LoadedReleases SET State = @p4, InFlightPolicy = @p5
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1 AND Version = @p6;`,

	// list: PK range seek from the keyset in key order, TOP (@p5); no index leads with TenantId,
	// so other tenants' rows in the range are read and rejected (an index (TenantId, ReleaseId,
	// AdapterVersion) would make it a pure seek).
	list: `SELECT TOP (@p5) ` + columns + ` FROM dbo.LoadedReleases
WHERE TenantId = @p1 AND (@p2 IS NULL OR State = @p2)
  AND ReleaseId >= @p3 AND (ReleaseId > @p3 OR AdapterVersion > @p4)
ORDER BY ReleaseId, AdapterVersion
OPTION (MAXDOP 1);`,

	// runningAttempts: IX_Attempts_Release seek (State = 0 literal), sorted by AttemptId so
	// attempts are locked in one order. After lock: every claim that saw the release active has
	// committed its attempt. Each row is then locked (attempts.Lock) and re-checked.
	runningAttempts: `SELECT AttemptId FROM dbo.ExecutionAttempts
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND State = 0 AND TenantId = @p1 ORDER BY AttemptId
OPTION (MAXDOP 1);`,

	// ownerIs: PK_ReleaseOwners seek WITH (UPDLOCK, HOLDLOCK): a missing key's range is locked
	// too, so two creates under one new id serialise here. ReleaseOwners has BLOCK predicates
	// only (000012): this reads another tenant's row, returning only whether it is ours. Two
	// creates in one gap can deadlock (1205): the victim reruns and sees the winner. 0 rows: no
	// owner yet.
	ownerIs: `SELECT CASE WHEN TenantId = @p2 THEN 1 ELSE 0 END AS Mine
FROM dbo.ReleaseOwners WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE ReleaseId = @p1;`,

	// claimOwner: inside the range ownerIs holds, so no other create inserts the key meanwhile.
	claimOwner: `INSERT INTO dbo.ReleaseOwners (ReleaseId, TenantId, CreatedAt) VALUES (@p1, @p2, @p3);`,
}
