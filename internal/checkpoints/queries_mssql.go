package checkpoints

// The SQL Server query set of the checkpoint store. Every statement takes @p1..@pN in the
// order queries.go documents and is one statement.
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
//   - Indexes (seed 001, kept as written): PK_Checkpoints (CheckpointId) is the clustered
//     index (a PRIMARY KEY is clustered when the table has no other clustered index);
//     UX_Checkpoints_Attempt_Sequence (AttemptId, Sequence) is nonclustered and unique, its
//     row locator the CheckpointId. It has no TenantId (the seed's index), so TenantId is a
//     residual predicate checked on the clustered row after a key lookup; the key lookup
//     is one row per index row, and every AttemptId belongs to one tenant.
//   - Row-level security (dbo.fn_TenantAccess on TenantId) adds its own residual filter on
//     Checkpoints, ExecutionAttempts and Runs, and blocks an insert of another tenant's row
//     (33504). Every statement also filters on TenantId itself.
//   - Arguments: uuid.UUID arrives as nvarchar and converts to uniqueidentifier (the higher
//     precedence), so the column side is never converted and seeks stay seeks; Sequence
//     and Phase arrive as int (int32 in Go); times as datetimeoffset; strings as nvarchar,
//     compared under the column's BIN2 collation (an explicit column collation wins over
//     the parameter's coercible default).
//   - Lock order of an append (DESIGN.md section 4): the fence's U locks on the attempt row,
//     then the run row (one statement); then X on the new checkpoint's keys; then the
//     attempt row again (attempts.Checkpointed converts this transaction's U to X).
var mssqlQueries = queries{
	// bySequence: the exact-repeat check, read only when the insert was refused by
	// UX_Checkpoints_Attempt_Sequence or the fence refused (runs.WriteFenced), so under the
	// fence's U locks on the attempt and its run. Index: UX_Checkpoints_Attempt_Sequence seek
	// on (@p2, @p3), at most one row; key lookup into PK_Checkpoints for the columns and the
	// TenantId residual; PK_ExecutionAttempts seek for the attempt's token (TenantId
	// residual). After a 2601 the duplicate is committed (every other append of the attempt
	// waits on the attempt's U lock), so it is in the image under RCSI; without RCSI short S
	// locks, compatible with this transaction's U locks. 0 rows -> ErrNotFound (nothing to
	// repeat). Errors: 1205 -> ErrRetryable.
	bySequence: `SELECT c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef, c.AdapterVersion,
    c.ContextSnapshotRef, c.Hash, c.CreatedAt, a.FencingToken AS AttemptToken
FROM dbo.Checkpoints AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.Sequence = @p3;`,

	// get: PK_Checkpoints (clustered) seek on @p3; TenantId and AttemptId residuals (a
	// checkpoint of another attempt in the path is not found). No hints: under RCSI the
	// last committed row; without RCSI a short S lock. 0 rows -> ErrNotFound (404).
	get: `SELECT ` + columns + ` FROM dbo.Checkpoints WHERE TenantId = @p1 AND AttemptId = @p2 AND CheckpointId = @p3;`,

	// insert: under the fence (the attempt row U-locked by this transaction). Writes
	// PK_Checkpoints (ids.New ids are COMB: the last six bytes are the time, which SQL
	// Server sorts first, so inserts append to the clustered index) and
	// UX_Checkpoints_Attempt_Sequence; X on both new keys until commit. The foreign key
	// FK_Checkpoints_ExecutionAttempts_AttemptId checks the attempt row with an S lock
	// (a locking read under RCSI too), compatible with this transaction's own U lock.
	// RCSI: no difference for an insert; a duplicate key that another transaction holds
	// uncommitted would make it wait, then fail or succeed, but every other append of this
	// attempt waits on the attempt's U lock, so a duplicate here is always committed.
	// Errors: 2601 on UX_Checkpoints_Attempt_Sequence -> ConflictError (the statement is
	// rolled back and the transaction stays usable: XACT_ABORT is OFF on the session); the
	// Go code re-reads the winner and answers repeat or sequence_conflict. 2627 on
	// PK_Checkpoints (a repeated random id: not expected) -> ConflictError, passed up as a
	// 500. 547 FK -> ErrBadReference (not expected: the fence read the attempt). 33504 ->
	// ErrRefused (TenantId is the session's, so not expected). 8152/2628 (truncation)
	// cannot arise: Draft.Validate bounds every string in UTF-16 code units, nvarchar's unit.
	// No 0-rows case.
	insert: `INSERT INTO dbo.Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion,
    ContextSnapshotRef, Hash, CreatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10);`,

	// list: keyset page in sequence order. Index: UX_Checkpoints_Attempt_Sequence range
	// seek AttemptId = @p2 AND Sequence > @p3, read in index order, so the ORDER BY needs no
	// sort and TOP (@p4) stops the seek; key lookups into PK_Checkpoints for the columns and
	// the TenantId residual. @p3 is -1 on the first page. No hints: under RCSI a consistent
	// image, no locks; without RCSI short S locks. 0 rows -> an empty page (the attempt
	// itself was checked first). No expected errors.
	list: `SELECT TOP (@p4) ` + columns + ` FROM dbo.Checkpoints
WHERE TenantId = @p1 AND AttemptId = @p2 AND Sequence > @p3
ORDER BY Sequence;`,

	// lastOfRun: the newest attempt's highest checkpoint. Index: IX_Attempts_Run_Step seek
	// on RunId (its leading column), key lookups into PK_ExecutionAttempts for TenantId
	// (residual) and FencingToken; per attempt, the CROSS APPLY seeks
	// UX_Checkpoints_Attempt_Sequence backwards on AttemptId and stops at TOP (1) after the
	// key lookup that passes the TenantId residual. Attempts without a checkpoint drop out
	// (CROSS, not OUTER, APPLY). The outer TOP (1) ORDER BY FencingToken DESC sorts the run's
	// attempts, at most its MaxAttempts (each claim makes one, with a greater token). No
	// hints: a read-only transaction; under RCSI each statement's image, no locks; without
	// RCSI short S locks. 0 rows -> ErrNotFound: the Go code walks to the run this one
	// continues (runLink). No expected errors.
	lastOfRun: `SELECT TOP (1) c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef,
    c.AdapterVersion, c.ContextSnapshotRef, c.Hash, c.CreatedAt, a.RunId
FROM dbo.ExecutionAttempts AS a
CROSS APPLY (
    SELECT TOP (1) k.CheckpointId, k.AttemptId, k.TenantId, k.Sequence, k.Phase, k.AdapterStateRef, k.AdapterVersion,
        k.ContextSnapshotRef, k.Hash, k.CreatedAt
    FROM dbo.Checkpoints AS k
    WHERE k.AttemptId = a.AttemptId AND k.TenantId = @p1
    ORDER BY k.Sequence DESC
) AS c
WHERE a.TenantId = @p1 AND a.RunId = @p2
ORDER BY a.FencingToken DESC;`,

	// runLink: PK_Runs (clustered) seek on @p2, TenantId residual (and RLS). Runs is read,
	// never written, here (internal/runs is its only writer); ContinuedFromRunId never
	// changes once written (TR_Runs_Guard), so the walk back the chain reads fixed links.
	// No hints: under RCSI the last committed row; without RCSI a short S lock, which waits
	// for a writer of the run in flight (U locks of the fence do not block it). 0 rows ->
	// ErrNotFound: 404 for the run asked about, the end of the chain for a predecessor
	// (purged by retention). No expected errors.
	runLink: `SELECT ContinuedFromRunId FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,
}
