package calls

// The SQL Server query set of the call store. Every statement takes @p1..@pN in the order
// queries.go documents and is one statement, so RowsAffected is its own count
// (CallRecords has no trigger).
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks and their order, READ_COMMITTED_SNAPSHOT (RCSI),
// what 0 rows gives, and the error numbers with what sqldb's MapError makes of them
// (2601/2627 -> *sqldb.ConflictError naming the index; 1205/1222/3960 -> ErrRetryable, the
// transaction runs again; 547 FOREIGN KEY -> ErrBadReference; 33504 -> ErrRefused;
// sql.ErrNoRows -> ErrNotFound; anything else passes through as a 500).
//
// Conventions that hold for every statement below:
//   - Transactions are READ COMMITTED, explicitly (sqldb); the database may or may not have
//     RCSI on (Azure SQL: on), so every statement is read for both.
//   - Indexes (seed 001, kept as written): PK_CallRecords (CallId) is the clustered index
//     (a PRIMARY KEY is clustered when the table has no other clustered index);
//     UX_Calls_Attempt_Sequence (AttemptId, Sequence) is nonclustered and unique, its row
//     locator the CallId. It has no TenantId (the seed's index), so TenantId is a residual
//     predicate checked on the clustered row after a key lookup, one per index row; every
//     AttemptId belongs to one tenant.
//   - Version is rowversion (a declared addition): stamped by the server on every insert
//     and update, never written here. The expected version arrives as binary(8)
//     (sqldb's Version), which compares with rowversion without conversion.
//   - Row-level security (dbo.fn_TenantAccess on TenantId) adds its own residual filter on
//     CallRecords and ExecutionAttempts, and blocks an insert or update that would leave a
//     row outside the session's tenant (33504). Every statement also filters on TenantId.
//   - Arguments: uuid.UUID arrives as nvarchar and converts to uniqueidentifier (the higher
//     precedence), so the column side is never converted and seeks stay seeks (a NULL
//     PolicyDecisionId arrives as an nvarchar NULL, which converts as well); Sequence and
//     Kind arrive as int (int32 in Go); times as datetimeoffset; strings as nvarchar,
//     compared under the column's BIN2 collation. Status literals are N'…' like the column.
//   - Lock order of a record or a finish (DESIGN.md section 4): the fence's U locks on the
//     attempt row, then the run row (one statement); then X on the call's keys. Every
//     writer of an attempt's calls passes the fence first, so the attempt row's U lock
//     serialises them.
var mssqlQueries = queries{
	// bySequence: the exact-repeat check of a record, read only when the insert was refused
	// by UX_Calls_Attempt_Sequence or the fence refused (runs.WriteFenced), so under the
	// fence's U locks on the attempt and its run. Index: UX_Calls_Attempt_Sequence seek on
	// (@p2, @p3), at most one row; key lookup into PK_CallRecords for the columns and the
	// TenantId residual; PK_ExecutionAttempts seek for the attempt's token (TenantId
	// residual). After a 2601 the duplicate is committed (every other record of the attempt
	// waits on the attempt's U lock), so it is in the image under RCSI; without RCSI short S
	// locks, compatible with this transaction's U locks. 0 rows -> ErrNotFound (nothing to
	// repeat). Errors: 1205 -> ErrRetryable.
	bySequence: `SELECT c.CallId, c.AttemptId, c.TenantId, c.Sequence, c.Kind, c.Target, c.RequestHash, c.PolicyDecisionId,
    c.ReceiptRef, c.Status, c.StartedAt, c.EndedAt, c.Version, a.FencingToken AS AttemptToken
FROM dbo.CallRecords AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.Sequence = @p3;`,

	// byID: PK_CallRecords (clustered) seek on @p3, TenantId and AttemptId residuals (a call
	// of another attempt in the path is not found); PK_ExecutionAttempts seek for the
	// token. Used under the fence (a finish that changed nothing reads why; the exact-repeat
	// check of a finish after the fence refused) and by GET. No hints: under RCSI the last committed row or this transaction's own;
	// without RCSI short S locks (compatible with the fence's U locks). Under the fence the
	// row cannot change until commit: its every writer waits on the attempt's U lock.
	// 0 rows -> ErrNotFound (404). Errors: 1205 -> ErrRetryable.
	byID: `SELECT c.CallId, c.AttemptId, c.TenantId, c.Sequence, c.Kind, c.Target, c.RequestHash, c.PolicyDecisionId,
    c.ReceiptRef, c.Status, c.StartedAt, c.EndedAt, c.Version, a.FencingToken AS AttemptToken
FROM dbo.CallRecords AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.CallId = @p3;`,

	// insert: under the fence (the attempt row U-locked by this transaction), answering the
	// row as stored (OUTPUT without INTO: CallRecords has no trigger). Writes PK_CallRecords
	// (COMB ids from ids.New: appends to the clustered index) and UX_Calls_Attempt_Sequence;
	// X on both new keys until commit. The foreign key
	// FK_CallRecords_ExecutionAttempts_AttemptId checks the attempt row with an S lock (a
	// locking read under RCSI too), compatible with this transaction's own U lock. RCSI: no
	// difference for an insert; every other record of this attempt waits on the attempt's U
	// lock, so a duplicate key here is always a committed one. Errors: 2601 on
	// UX_Calls_Attempt_Sequence -> ConflictError (the statement is rolled back, the
	// transaction stays usable: XACT_ABORT is OFF on the session); the Go code reads the
	// winner (bySequence) and answers repeat or sequence_conflict. 2627 on PK_CallRecords (a
	// repeated random id: not expected) -> ConflictError, passed up as a 500. 547 FK ->
	// ErrBadReference (not expected: the fence read the attempt). 33504 -> ErrRefused (not
	// expected: TenantId is the session's). 8152/2628 (truncation) cannot arise: Draft.Validate
	// bounds every string in UTF-16 code units. Always one row out, or an error.
	insert: `INSERT INTO dbo.CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, PolicyDecisionId,
    ReceiptRef, Status, StartedAt, EndedAt)
OUTPUT inserted.CallId, inserted.AttemptId, inserted.TenantId, inserted.Sequence, inserted.Kind, inserted.Target,
    inserted.RequestHash, inserted.PolicyDecisionId, inserted.ReceiptRef, inserted.Status, inserted.StartedAt,
    inserted.EndedAt, inserted.Version
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, NULL, N'started', @p9, NULL);`,

	// finish: under the fence, answering the row as stored. PK_CallRecords seek on @p3; the
	// TenantId, AttemptId, Status and Version predicates are residuals on that one row. @p7
	// is the If-Match version as binary(8), or NULL (typed nvarchar by the driver, hence the
	// explicit CONVERT: rowversion takes no implicit conversion from nvarchar). U then X on
	// the clustered key until commit (no nonclustered index holds a changed column); the
	// server stamps a new Version. An UPDATE finds its row with U locks on the latest
	// committed version under RCSI too. 0 rows: the call is missing, finished already, or at
	// another version: the Go code reads it (byID) to answer repeat, 404, 409 or 412; every
	// writer of the attempt's calls holds the attempt's U lock, so nothing changes between
	// the two. Errors: 33504 -> ErrRefused (not expected); 1205 -> ErrRetryable; 8152/2628
	// cannot arise (Finish.check bounds the receipt).
	finish: `UPDATE dbo.CallRecords SET Status = @p4, ReceiptRef = @p5, EndedAt = @p6
OUTPUT inserted.CallId, inserted.AttemptId, inserted.TenantId, inserted.Sequence, inserted.Kind, inserted.Target,
    inserted.RequestHash, inserted.PolicyDecisionId, inserted.ReceiptRef, inserted.Status, inserted.StartedAt,
    inserted.EndedAt, inserted.Version
WHERE TenantId = @p1 AND AttemptId = @p2 AND CallId = @p3 AND Status = N'started'
    AND (@p7 IS NULL OR Version = CONVERT(binary(8), @p7));`,

	// list: keyset page in sequence order. Index: UX_Calls_Attempt_Sequence range seek
	// AttemptId = @p2 AND Sequence > @p3 in index order, so no sort and TOP (@p4) stops the
	// seek; key lookups into PK_CallRecords for the columns and the TenantId residual. @p3 is
	// -1 on the first page. No hints: under RCSI a consistent image, no locks; without RCSI
	// short S locks. 0 rows -> an empty page (the attempt itself was checked first). No
	// expected errors.
	list: `SELECT TOP (@p4) ` + columns + ` FROM dbo.CallRecords
WHERE TenantId = @p1 AND AttemptId = @p2 AND Sequence > @p3
ORDER BY Sequence;`,

	// abandon: the run-lease core's AttemptEnded hook, inside the transaction that ends the
	// attempt (complete, release: after the fence's U locks on the attempt, then the run; the
	// reaper: after its U lock on the attempt, then the run). Index: UX_Calls_Attempt_Sequence
	// range seek AttemptId = @p2 (every call of the attempt: a bounded set, one per sequence
	// the holder wrote), key lookups into PK_CallRecords for the TenantId and Status
	// residuals; U locks while qualifying, X on the rows it changes (the clustered row only:
	// no nonclustered index holds Status or EndedAt). Every other writer of this attempt's
	// calls (record, finish) waits on the attempt's U lock that this transaction holds, so
	// nothing here waits on a call row, and the lock order stays attempt, run, calls. Under
	// RCSI an UPDATE still qualifies its rows on the latest committed version with locks.
	// The literals are N'…' like the column (BIN2, exact). 0 rows is normal (no open call).
	// Errors: 1205 -> ErrRetryable (the whole attempt-ending transaction runs again); 33504
	// -> ErrRefused (not expected: the rows are the tenant's; the reaper's maintenance scope
	// passes the block predicate).
	abandon: `UPDATE dbo.CallRecords SET Status = N'abandoned', EndedAt = @p3
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'started';`,
}
