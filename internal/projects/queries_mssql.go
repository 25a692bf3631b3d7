package projects

// The SQL Server query set of the project store. Every statement takes @p1..@pN in the
// order queries.go documents and is one statement, so RowsAffected is its own count
// (dbo.Projects has no trigger). Transactions are READ COMMITTED, explicitly, in the
// tenant's scope: row-level security (dbo.fn_TenantAccess) filters and blocks on TenantId,
// and every statement filters on it too. PK_Projects is (TenantId, ProjectId), clustered;
// identifiers compare under the columns' BIN2 collation. Errors are mapped by the dialect:
// 2627 on PK_Projects -> *sqldb.ConflictError, 547 (FK_Projects_Tenants, or a CHECK)
// -> ErrBadReference / ErrRefused, 1205/1222 -> ErrRetryable, 33504 -> ErrRefused,
// sql.ErrNoRows -> ErrNotFound.

// mssqlLeasedCount reads the project's leased count from its counter row (migrations
// 000011: the count left Projects so a claim does not change the project's rowversion,
// its ETag). Reading check: PK_ProjectLeases seek per project row, no hints: under RCSI
// the last committed count; without RCSI a short S lock that waits for a claim or an
// unlease of the project in flight. No row counts 0.
const mssqlLeasedCount = `COALESCE((SELECT l.LeasedCount FROM dbo.ProjectLeases AS l
    WHERE l.TenantId = p.TenantId AND l.ProjectId = p.ProjectId), 0) AS LeasedCount`

var mssqlQueries = queries{
	// get: PK_Projects seek, then PK_ProjectLeases (above). 0 rows -> ErrNotFound.
	get: `SELECT p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId = @p2;`,
	// insert: a create, after get found no row. X on the new PK_Projects key (RangeI-N
	// first); FK_Projects_Tenants takes a short S lock on the tenant row; the server stamps
	// Version. Two creates of one project: the second's insert waits for the first's key
	// lock and then fails with 2627 -> ConflictError (the transaction stays usable:
	// XACT_ABORT is OFF on the service's sessions), which Put answers 428
	// precondition_required, as for any PUT of an existing project without If-Match. RCSI:
	// no difference for an insert. CK_Projects_RetentionDays cannot refuse (the API bounds
	// retentionDays). No 0-rows case.
	insert: `INSERT INTO dbo.Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p5);`,
	// update: PK_Projects seek, U then X on the row; Version = @p6 (binary(8) against the
	// rowversion, no conversion) makes it conditional on the version get read and the
	// If-Match matched, so a concurrent update that committed first leaves 0 rows -> 412
	// precondition_failed. A purge batch holds the row U-locked while it re-judges chains of
	// the project (retention's lockMembers): the update waits for it, and the raised
	// retention applies from then on. RCSI: an UPDATE qualifies its row on the latest
	// committed version with locks. Errors: 1205 -> ErrRetryable; 33504 -> ErrRefused (not
	// expected: the session's tenant).
	update: `UPDATE dbo.Projects SET Active = @p3, RetentionDays = @p4, UpdatedAt = @p5
WHERE TenantId = @p1 AND ProjectId = @p2 AND Version = @p6;`,
	// list: PK_Projects range seek from @p2 in key order, TOP (@p3); a PK_ProjectLeases seek
	// per row. 0 rows -> an empty page.
	list: `SELECT TOP (@p3) p.TenantId, p.ProjectId, p.Active, p.RetentionDays, ` + mssqlLeasedCount + `, p.CreatedAt, p.UpdatedAt, p.Version
FROM dbo.Projects AS p WHERE p.TenantId = @p1 AND p.ProjectId > @p2 ORDER BY p.ProjectId;`,
}
