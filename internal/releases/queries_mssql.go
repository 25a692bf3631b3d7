package releases

// The SQL Server query set of the release store. Every statement takes @p1..@pN in the
// order queries.go documents (the same arguments the SQLite statement gets) and is one
// statement, so RowsAffected is its own count.
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks and their order, READ_COMMITTED_SNAPSHOT (RCSI),
// what 0 rows gives, and the error numbers with what MapError makes of them:
//   2601, 2627           -> *sqldb.ConflictError (Constraint holds the message, which names
//                           the constraint: PK_LoadedReleases)
//   1205, 1222, 3960     -> sqldb.ErrRetryable (the transaction is run again)
//   33504 (RLS block)    -> sqldb.ErrRefused
//   sql.ErrNoRows        -> sqldb.ErrNotFound
// Everything else passes through unmapped (a 500).
//
// Conventions that hold for every statement below:
//   - Transactions are READ COMMITTED, explicitly (sqldb.once); the database may or may not
//     have RCSI on (Azure SQL: on), so every statement is read for both.
//   - LoadedReleases.Version is rowversion: never written here. The table has no trigger,
//     and no statement here uses OUTPUT.
//   - PK_LoadedReleases is the clustered primary key (ReleaseId, AdapterVersion): the seed
//     keys the table without TenantId, because a release id is global. So every access seeks
//     on the pair and checks TenantId as a residual predicate, and row-level security
//     (dbo.fn_TenantAccess on TenantId) adds the same check again. The table has no index
//     that leads with TenantId (the seed declares none); see list.
//   - String arguments arrive as nvarchar and compare under the columns' BIN2 collation
//     (the column's collation wins over a parameter's); ints arrive as bigint; a NULL as
//     nvarchar(1); a time.Time as datetimeoffset; a version as varbinary(8).
//   - Lock order: the release row first (lock), then, when the cancel policy applies, each
//     running attempt row (attempts.Lock, U) and its run row (runs' lock, U), as DESIGN.md
//     section 4 orders attempt before run. A claim takes the tenant row, then the release
//     row (lock, through the CheckClaim hook), then queued run rows; no writer holds an
//     attempt or run row while it asks for a release row, so these orders cannot cycle.

// mssqlQueries is the SQL Server statement set; each statement's reading check is above it.
var mssqlQueries = queries{
	// get: PK_LoadedReleases seek on (ReleaseId, AdapterVersion), TenantId residual (and
	// RLS). No hints: under RCSI the last committed row; without RCSI a short S lock. 0 rows
	// -> ErrNotFound (missing or another tenant's: the caller cannot tell them apart).
	// Errors: 1205/1222 -> ErrRetryable.
	get: `SELECT ` + columns + ` FROM dbo.LoadedReleases WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1;`,

	// lock: get, holding a U lock on the PK_LoadedReleases key until commit. The first lock
	// of a release write (Put) and the only lock of a claim's release check (CheckClaim), so
	// a transition to draining or retired and a claim naming the release serialise: a claim
	// that saw the release active has committed its attempt before the transition looks for
	// running attempts, and a claim after the transition sees it. UPDLOCK makes it a locking
	// read under RCSI too (waits for a writer in flight, returns the latest committed row);
	// U locks do not block plain readers. A missing key takes no lock that lasts (no
	// HOLDLOCK): the insert's primary key is the guard against two creates. 0 rows ->
	// ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	// Uncertain: on another tenant's row the seek reads the key before the TenantId and RLS
	// predicates reject it, and whether the U lock is then released at once or kept to the
	// end of this (short) transaction depends on where the plan evaluates those predicates.
	// Kept, it only makes that tenant's writers of the same key wait for this transaction; it
	// shows no data.
	lock: `SELECT ` + columns + ` FROM dbo.LoadedReleases WITH (UPDLOCK, ROWLOCK)
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1;`,

	// insert: X on the new PK_LoadedReleases key. An uncommitted insert of the same key by
	// another transaction makes it wait for that transaction's end, then fail or succeed. A
	// key that exists (this tenant's, just committed by a concurrent create, or another
	// tenant's, which RLS hides from every read) -> 2627 on PK_LoadedReleases ->
	// ConflictError; the transaction stays usable (XACT_ABORT is OFF on the session), and
	// Put re-reads to tell the two apart. RCSI: no difference for an insert. 33504 (TenantId
	// outside the session tenant) cannot happen: @p3 is the session tenant -> ErrRefused.
	// Lengths are validated before (ids as ident=256/32, hash 64, policy 'drain'|'cancel'),
	// so no truncation error (8152) arises.
	insert: `INSERT INTO dbo.LoadedReleases (ReleaseId, AdapterVersion, TenantId, ManifestHash, ContentRefsJson, State,
    VerifiedAt, InFlightPolicy)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8);`,

	// update: PK_LoadedReleases seek of the row lock holds (U, converted to X here). Version
	// = @p6 compares rowversion with binary(8) without conversion. 0 rows: the row changed
	// since lock read it, which cannot happen under lock's U lock; Put answers
	// PreconditionFailed all the same. Errors: 1205 -> ErrRetryable; 33504 -> ErrRefused.
	update: `UPDATE dbo.LoadedReleases SET State = @p4, InFlightPolicy = @p5
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND TenantId = @p1 AND Version = @p6;`,

	// list: keyset (ReleaseId, AdapterVersion) after (@p3, @p4), TOP (@p5). Index:
	// PK_LoadedReleases range seek on ReleaseId >= @p3 in key order, so the ORDER BY needs no
	// sort and TOP stops after @p5 matches; TenantId, State and the keyset tie-break are
	// residual. The same plan serves every argument combination, so no RECOMPILE.
	// Cost: without an index leading with TenantId the seek also reads other tenants' rows
	// in the range (a declared-addition index IX_LoadedReleases_Tenant (TenantId, ReleaseId,
	// AdapterVersion) would make it a pure seek; requested from the lead). No hints: under
	// RCSI committed rows, no locks; without RCSI short S locks, so a row another transaction
	// is writing (of any tenant) makes it wait for that commit. It can read many rows (other
	// tenants' included) before a page fills, so OPTION (MAXDOP 1) keeps the RLS
	// predicate's SESSION_CONTEXT out of a parallel plan (TSQL.md). 0 rows -> an empty page.
	// Errors: 1205/1222 -> ErrRetryable.
	list: `SELECT TOP (@p5) ` + columns + ` FROM dbo.LoadedReleases
WHERE TenantId = @p1 AND (@p2 IS NULL OR State = @p2)
  AND ReleaseId >= @p3 AND (ReleaseId > @p3 OR AdapterVersion > @p4)
ORDER BY ReleaseId, AdapterVersion
OPTION (MAXDOP 1);`,

	// runningAttempts: IX_Attempts_Release seek on (ReleaseId, AdapterVersion, State = 0)
	// (literal 0, so the seek covers all three keys), a PK_ExecutionAttempts lookup for the
	// TenantId residual (and RLS), then a sort of the few matches by AttemptId, so attempts
	// are locked in one order. Runs after lock holds the release row: every claim that saw
	// the release active held that row until its commit, so its attempt is committed and
	// visible here (RCSI: the committed image at statement start; without RCSI short S
	// locks, which wait for an attempt write in flight). Each row is then locked with
	// attempts.Lock and re-checked, since it may end before that lock. 0 rows -> nothing to
	// cancel. Errors: 1205/1222 -> ErrRetryable.
	runningAttempts: `SELECT AttemptId FROM dbo.ExecutionAttempts
WHERE ReleaseId = @p2 AND AdapterVersion = @p3 AND State = 0 AND TenantId = @p1 ORDER BY AttemptId;`,

	// ownerIs: the ownership check of a create, after lock found no row of the tenant for
	// the pair. Index: PK_ReleaseOwners (clustered, ReleaseId) seek on @p1, at most one row.
	// Row-level security: ReleaseOwners has BLOCK predicates only, no FILTER (migration
	// 000012), so this tenant-scoped read sees another tenant's row, which the check needs;
	// the statement returns only whether the session's tenant (@p2, compared under the
	// column's BIN2 collation) owns the id, never the owner, and no other statement reads
	// the table. Locks: UPDLOCK + HOLDLOCK take a U lock on the key when it exists, and a
	// RangeS-U lock on the range where it would be when it does not (serializable for this
	// one table, key-range locking), both held to commit. RangeS-U conflicts with RangeS-U
	// and with the RangeI-N an insert into the range needs, so two creates under one new id
	// serialise here: the second waits, then sees the first's committed row (mine, or
	// ReleaseConflict); two new ids in the same gap of the index serialise as well, briefly
	// (the gap is between neighbouring ids). UPDLOCK and HOLDLOCK make it a locking read
	// under RCSI too (the latest committed row, not a version). Lock order: the tenant's
	// LoadedReleases key (lock, U, a missing key holds nothing), then this key, then the
	// inserts; no other path takes a ReleaseOwners lock. 0 rows -> ErrNotFound (no owner
	// yet). Errors: 1205/1222 -> ErrRetryable (two creates that both hold RangeS-U in a gap
	// and both insert can deadlock: the victim is run again and then sees the winner's
	// row).
	ownerIs: `SELECT CASE WHEN TenantId = @p2 THEN 1 ELSE 0 END AS Mine
FROM dbo.ReleaseOwners WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE ReleaseId = @p1;`,

	// claimOwner: the tenant becomes the id's owner. PK_ReleaseOwners insert (RangeI-N then
	// X on the new key), inside the range this transaction holds RangeS-U on, so no other
	// create can insert the same key meanwhile. FK_ReleaseOwners_Tenants takes a short S
	// lock on the tenant row. The BLOCK predicate (AFTER INSERT) refuses a TenantId that is
	// not the session's (33504 -> ErrRefused; not expected: @p2 is the session tenant).
	// @p3 (datetimeoffset(7), whole milliseconds) fits datetimeoffset(3) exactly. Errors:
	// 2627 on PK_ReleaseOwners -> ConflictError (not expected under the range lock; the Go
	// code re-reads and answers as for the owner); 1205 -> ErrRetryable.
	claimOwner: `INSERT INTO dbo.ReleaseOwners (ReleaseId, TenantId, CreatedAt) VALUES (@p1, @p2, @p3);`,
}
