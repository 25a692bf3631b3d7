package operations

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the bulk operations. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. Neither table has a trigger;
// PK_Operations (TenantId, OperationId) and PK_OperationRuns (TenantId, OperationId, Seq)
// are clustered, and row-level security filters both by tenant (000035).

const mssqlColumns = `TenantId, OperationId, RequestKey, BodyDigest, Action, Reason, State, Matched, [Cursor], Cancelled,
    CancelRequested, Continued, SkippedEnded, SkippedNotEnded, SkippedExhausted, SkippedNotFound, SkippedContinued, Holder, LeaseUntil,
    CreatedAt, CreatedBy, FinishedAt`

var mssqlQueries = queries{
	// get: PK_Operations seek (one row). 0 rows: no such operation, or another tenant's (RLS).
	get: `SELECT ` + mssqlColumns + ` FROM dbo.Operations WHERE TenantId = @p1 AND OperationId = @p2;`,
	// byRequest: UX_Operations_Request seek, key lookup on the PK. RequestKey is BIN2: an
	// exact repeat matches byte for byte.
	byRequest: `SELECT ` + mssqlColumns + ` FROM dbo.Operations WHERE TenantId = @p1 AND RequestKey = @p2;`,
	// insert: after byRequest found no row; two concurrent creates of one request: the
	// second gets 2601 on UX_Operations_Request -> ConflictError, and Create reads the
	// winner's row. Reason goes as nvarchar(max) (Dialect.Text): never compared.
	insert: `INSERT INTO dbo.Operations (TenantId, OperationId, RequestKey, BodyDigest, Action, Reason, State, Matched, [Cursor],
    Cancelled, CancelRequested, Continued, SkippedEnded, SkippedNotEnded, SkippedExhausted, SkippedNotFound, SkippedContinued, CreatedAt, CreatedBy)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, N'running', @p7, 0, 0, 0, 0, 0, 0, 0, 0, 0, @p8, @p9);`,
	// insertRuns: OPENJSON of an array gives [key] as the position (nvarchar: cast) and value
	// as the id text (cast to uniqueidentifier); appends to the PK in Seq order. @p4 is
	// Dialect.JSON (nvarchar(max)): one plan whatever the chunk's length.
	insertRuns: `INSERT INTO dbo.OperationRuns (TenantId, OperationId, Seq, RunId)
SELECT @p1, @p2, @p3 + CAST(j.[key] AS bigint) + 1, CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p4) AS j;`,
	// pending: across tenants (maintenance scope), IX_Operations_Pending (filtered on
	// State = N'running', repeated so it matches) in LeaseUntil order (NULLs first, as in
	// SQLite), TOP (@p2). READPAST skips a row another runner is taking; READCOMMITTEDLOCK
	// keeps it under RCSI. What it returns is only a hint: take decides.
	pending: `SELECT TOP (@p2) TenantId, OperationId FROM dbo.Operations WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = N'running' AND (LeaseUntil IS NULL OR LeaseUntil < @p1)
ORDER BY LeaseUntil
OPTION (MAXDOP 1);`,
	// take: PK seek, conditional on the lease having passed (like the reaper's): of two
	// runners, the second waits on the first's row lock, then matches 0 rows.
	take: `UPDATE dbo.Operations SET Holder = @p3, LeaseUntil = @p4
WHERE TenantId = @p1 AND OperationId = @p2 AND State = N'running' AND (LeaseUntil IS NULL OR LeaseUntil < @p5);`,
	// hold: PK seek, the batch's first statement: the operation row's lock is taken before
	// any run's, and held to the commit, so a runner that took the lease meanwhile waits, then
	// finds the cursor moved.
	hold: `UPDATE dbo.Operations SET LeaseUntil = @p5
WHERE TenantId = @p1 AND OperationId = @p2 AND Holder = @p3 AND [Cursor] = @p4 AND State = N'running';`,
	// batch: PK_OperationRuns range after @p3, TOP (@p4), in key order.
	batch: `SELECT TOP (@p4) Seq, RunId FROM dbo.OperationRuns WHERE TenantId = @p1 AND OperationId = @p2 AND Seq > @p3
ORDER BY Seq
OPTION (MAXDOP 1);`,
	// setResult: PK seek; Result is a short code from this package.
	setResult: `UPDATE dbo.OperationRuns SET Result = @p4 WHERE TenantId = @p1 AND OperationId = @p2 AND Seq = @p3;`,
	// advance: PK seek on the row hold locked in this transaction. @p11 decides three
	// columns at once (finished: succeeded, unleased).
	advance: `UPDATE dbo.Operations SET [Cursor] = @p3, Cancelled = Cancelled + @p4, CancelRequested = CancelRequested + @p5,
    Continued = Continued + @p6, SkippedEnded = SkippedEnded + @p7, SkippedNotEnded = SkippedNotEnded + @p8,
    SkippedExhausted = SkippedExhausted + @p9, SkippedNotFound = SkippedNotFound + @p10, FinishedAt = @p11,
    SkippedContinued = SkippedContinued + @p12,
    State = CASE WHEN @p11 IS NULL THEN State ELSE N'succeeded' END,
    Holder = CASE WHEN @p11 IS NULL THEN Holder ELSE NULL END,
    LeaseUntil = CASE WHEN @p11 IS NULL THEN LeaseUntil ELSE NULL END
WHERE TenantId = @p1 AND OperationId = @p2;`,
}
