package delegations

// The SQL Server query set of the delegation store. Every statement takes @p1..@pN in the
// order queries.go documents and is one statement, so RowsAffected is its own count
// (dbo.SubAgentDelegations has no trigger; the Runs statements here only read).
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks and their order, READ_COMMITTED_SNAPSHOT (RCSI),
// what 0 rows gives, and the error numbers with what sqldb's MapError makes of them:
//
//	2601, 2627           -> *sqldb.ConflictError
//	1205, 1222, 3960     -> sqldb.ErrRetryable (the transaction is run again)
//	547 FOREIGN KEY      -> sqldb.ErrBadReference
//	33504 (RLS block)    -> sqldb.ErrRefused
//	sql.ErrNoRows        -> sqldb.ErrNotFound
//
// Everything else passes through unmapped (a 500).
//
// Conventions that hold for every statement below:
//   - Transactions are READ COMMITTED, explicitly (sqldb.once); each statement is read with
//     RCSI on (Azure SQL's default) and off.
//   - Version is rowversion: never written here.
//   - PK_SubAgentDelegations is clustered on DelegationId (the seed's PRIMARY KEY), so
//     IX_Delegations_Attempt is in effect (AttemptId, CreatedAt, DelegationId) and
//     UX_Delegations_ChildRun carries DelegationId as its row locator.
//   - A NULL argument arrives typed nvarchar(1); a time.Time as datetimeoffset(7) (values are
//     truncated to milliseconds before they are sent); a uuid.UUID as its string, converted
//     to uniqueidentifier (the column's type wins, never the column converted).
//   - Row-level security adds a residual predicate on TenantId to every access; every
//     statement filters on TenantId itself. The hook's statements also run in the reaper's
//     MaintenanceScope transactions (the documented bypass), still naming the run's tenant.
//   - Lock order: a create locks the attempt, then the parent run (the fence), then writes
//     the child run (EnqueueTx) and last the delegation row. The hook runs in transactions
//     that hold the child run (and, for a claim, the tenant row; for a holder write or the
//     reaper, the child's attempt first) and touches the delegation row last. Nothing takes
//     a delegation row and then asks for a run or attempt, so no cycle goes through it.
var mssqlQueries = queries{
	// insert: PK_SubAgentDelegations (a COMB id appends), UX_Delegations_ChildRun and
	// IX_Delegations_Attempt; X on the new keys. It answers the row as stored (OUTPUT
	// without INTO: the table has no trigger), so Create reads nothing back. The FK check
	// reads the attempt's PK key with a short S lock, compatible with the U lock this
	// transaction holds on it from the fence. RCSI: no difference for an insert. Always one
	// row out, or an error. Errors: 2601 on UX_Delegations_ChildRun -> ConflictError, not
	// expected (the child run was created by this same transaction); 547 FK ->
	// ErrBadReference (not expected after the fence); 33504 -> ErrRefused.
	insert: `INSERT INTO dbo.SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth,
    Status, CreatedAt)
OUTPUT inserted.DelegationId, inserted.AttemptId, inserted.TenantId, inserted.ChildRunId, inserted.ChildAgentId,
    inserted.Purpose, inserted.Depth, inserted.Status, inserted.CreatedAt, inserted.Version
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9);`,

	// get: PK seek, TenantId residual (and RLS). No hints: under RCSI the last committed row
	// (or this transaction's own insert, which Create reads back); without RCSI a short S
	// lock. 0 rows -> ErrNotFound (missing or another tenant's: the same answer).
	get: `SELECT ` + columns + ` FROM dbo.SubAgentDelegations WHERE TenantId = @p1 AND DelegationId = @p2;`,

	// byChildRun: UX_Delegations_ChildRun seek (unique), PK lookup, TenantId residual. No
	// hints. In the hook, every transaction that changes this delegation's status holds the
	// run it follows (U or X, to commit), and only the newest run of a chain can change, so
	// those transactions are already serialised and a plain read is current: under RCSI
	// the last committed row, which no uncommitted writer can be ahead of; without RCSI a
	// short S lock. In a create's repeat check it reads a committed delegation made with its
	// child run. 0 rows -> ErrNotFound (the run is not a delegated child: the hook writes
	// nothing, a create answers sequence_conflict).
	byChildRun: `SELECT ` + columns + ` FROM dbo.SubAgentDelegations WHERE TenantId = @p1 AND ChildRunId = @p2;`,

	// listByAttempt: IX_Delegations_Attempt seek on AttemptId, already in (CreatedAt,
	// DelegationId) order, so no sort; PK lookups for the other columns, TenantId residual.
	// OPTION (RECOMPILE) embeds the cursor so it becomes a seek bound (as in runs' list).
	// DelegationId order is uniqueidentifier order here and text order on SQLite: each
	// dialect's comparison and ORDER BY agree, which is all a keyset needs. No hints. 0 rows
	// -> an empty page.
	listByAttempt: `SELECT TOP (@p5) ` + columns + ` FROM dbo.SubAgentDelegations
WHERE TenantId = @p1 AND AttemptId = @p2
    AND (@p3 IS NULL OR CreatedAt > @p3 OR (CreatedAt = @p3 AND DelegationId > @p4))
ORDER BY CreatedAt, DelegationId
OPTION (RECOMPILE);`,

	// listByRun: the run page's delegated children in one read. IX_Attempts_Run_Step seek on
	// RunId (the run's attempts, one per claim), then per attempt an IX_Delegations_Attempt
	// seek and PK lookups; a sort of the run's delegations and TOP (@p3). Reads only: under
	// RCSI no locks, without it short S locks. 0 rows -> an empty list. OPTION (MAXDOP 1):
	// not a single key seek (TSQL.md, SESSION_CONTEXT in parallel plans).
	listByRun: `SELECT TOP (@p3) ` + prefixed("d.") + ` FROM dbo.ExecutionAttempts a
JOIN dbo.SubAgentDelegations d ON d.AttemptId = a.AttemptId
WHERE a.RunId = @p2 AND a.TenantId = @p1 AND d.TenantId = @p1
ORDER BY d.CreatedAt, d.DelegationId
OPTION (MAXDOP 1);`,

	// setStatus: PK seek, X on the row (Status is in no index, so only the clustered row
	// changes). Runs inside the transaction that moves the child run, after its locks.
	// "Status <> @p3" keeps a repeat from stamping a new rowversion (the column's BIN2
	// collation decides the comparison). RCSI: an UPDATE finds its row with locks on the
	// latest committed version. 0 rows: the status was already @p3, not an error. Errors:
	// 1205 -> ErrRetryable (the whole run transaction is retried); 33504 -> ErrRefused.
	setStatus: `UPDATE dbo.SubAgentDelegations SET Status = @p3
WHERE TenantId = @p1 AND DelegationId = @p2 AND Status <> @p3;`,

	// runByIdempotencyKey: UX_Runs_Idempotency seek (TenantId, IdempotencyKey), covering
	// (RunId is PK_Runs' clustered key, carried by the index). "IdempotencyKey IS NOT NULL"
	// repeats the index's filter so the filtered index matches whatever the optimizer infers
	// from "= @p2" (as runs' byIdempotency). Read only after the fence refused a create
	// (its exact-repeat check), under the fence's U locks; a create of the same parent run
	// in flight would hold them too, so what is read is committed. No hints: under RCSI
	// versioned, without RCSI a short S lock. 0 rows -> ErrNotFound (nothing to repeat).
	runByIdempotencyKey: `SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 AND IdempotencyKey = @p2 AND IdempotencyKey IS NOT NULL;`,

	// continuedFrom: PK_Runs seek, TenantId residual. ContinuedFromRunId never changes
	// (TR_Runs_Guard refuses it), so any committed version is right: under RCSI no lock;
	// without RCSI a short S lock, which waits only for a writer of that older, ended run
	// (retention's purge). 0 rows -> ErrNotFound (purged: the walk stops).
	continuedFrom: `SELECT ContinuedFromRunId FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// delegatedSiblings (the hook, for a continuation): IX_Attempts_Run_Step seek on RunId
	// (the parent's attempts, a handful; PK_ExecutionAttempts lookup for the TenantId
	// residual), IX_Delegations_Attempt seek on each AttemptId (PK lookup for ChildRunId,
	// Status, TenantId), PK_Runs seek on each ChildRunId with Subject and TenantId as
	// residuals. Rows read: the parent run's attempts and delegations, never the child's
	// chain. No hints. Locks, in that order: short S locks on the parent's attempt rows,
	// its delegation rows and their child runs without RCSI, none with RCSI (the last
	// committed versions). The transaction already holds the continuation's run (U or X,
	// and the tenant row for a claim), but not yet the leased counters (TenantLeases,
	// ProjectLeases: the run-lease core takes them after the hooks); a transaction that
	// holds one of the parent's attempt rows X (a holder write; the parent's complete,
	// release or take-back, which then takes the counters; or a create, which locks the
	// attempt, then the parent run, then writes a new child run and delegation) never asks
	// for a run of this chain or the tenant row, so the short wait cannot close a cycle. A delegation being created
	// concurrently is not seen (RCSI) or waited for; it makes a new child run, which is a
	// chain's first run, never a continuation of this chain, so missing it changes nothing.
	// 0 rows: this chain is not delegated (the hook writes nothing). Errors: 1205, 1222 ->
	// ErrRetryable (S locks without RCSI; the whole run transaction is retried).
	delegatedSiblings: `SELECT d.DelegationId, d.ChildRunId, d.Status
FROM dbo.ExecutionAttempts AS a
JOIN dbo.SubAgentDelegations AS d ON d.AttemptId = a.AttemptId
JOIN dbo.Runs AS c ON c.RunId = d.ChildRunId
WHERE a.RunId = @p2 AND a.TenantId = @p1 AND d.TenantId = @p1 AND c.TenantId = @p1 AND c.Subject = @p3;`,
}
