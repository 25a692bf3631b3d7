package decisions

// The SQL Server query set of the decision store. Every statement takes @p1..@pN in the
// order queries.go documents and is one statement, so RowsAffected is its own count
// (dbo.DecisionRequests has no trigger).
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks and their order, READ_COMMITTED_SNAPSHOT (RCSI),
// what 0 rows gives, and the error numbers with what sqldb's MapError makes of them:
//
//	2601, 2627           -> *sqldb.ConflictError (none expected: the only unique key is the
//	                        PK, and DecisionId is a new COMB id)
//	1205, 1222, 3960     -> sqldb.ErrRetryable (the transaction is run again)
//	547 FOREIGN KEY      -> sqldb.ErrBadReference (AttemptId; the fence read the attempt)
//	33504 (RLS block)    -> sqldb.ErrRefused
//	sql.ErrNoRows        -> sqldb.ErrNotFound
//
// Everything else passes through unmapped (a 500).
//
// Conventions that hold for every statement below:
//   - Transactions are READ COMMITTED, explicitly (sqldb.once); the database may or may not
//     have RCSI on (Azure SQL: on), so each statement is read for both.
//   - Version is rowversion: never written here; the server stamps every insert and update.
//   - PK_DecisionRequests is clustered on DecisionId (the seed's PRIMARY KEY, clustered by
//     default), so every nonclustered index carries DecisionId as its last key column:
//     IX_Decisions_Attempt is in effect (AttemptId, RequestedAt, DecisionId), and
//     IX_Decisions_Tenant_Status names it explicitly.
//   - Status is nvarchar(16) COLLATE Latin1_General_100_BIN2: compared with N'…' literals
//     and parameters the column's (implicit) collation wins, so matches are exact and
//     case-sensitive, as on SQLite. The filtered index IX_Decisions_PendingExpiry
//     (ExpiresAt WHERE Status = N'pending' AND ExpiresAt IS NOT NULL) is matched only by
//     those literals, never a parameter.
//   - A NULL argument arrives typed nvarchar(1); a time.Time as datetimeoffset(7) (values are
//     truncated to milliseconds before they are sent); a uuid.UUID as its string. Each is
//     converted to the column's type (uniqueidentifier, datetimeoffset), never the column.
//   - Row-level security (dbo.fn_TenantAccess on TenantId) adds a residual predicate to
//     every access; tenant statements filter on TenantId themselves as well. expire runs in
//     MaintenanceScope (the documented bypass) and names no tenant.
//   - Lock order: a holder's request locks the attempt, then the run (the fence), then
//     writes its new decision row and the attempt row it already holds. closeForAttempt
//     runs inside a transaction that holds the attempt and the run, and takes decision rows
//     last. answer takes one decision row and nothing else; expire takes decision rows only
//     and skips locked ones (READPAST). So no cycle: every path that holds a decision row
//     waits for nothing but decision rows, and only expire holds several of them, which
//     never waits.
var mssqlQueries = queries{
	// insert: a new pending decision. Index: writes PK_DecisionRequests (a COMB id appends
	// at the end), IX_Decisions_Tenant_Status, IX_Decisions_Attempt and, with an
	// ExpiresAt, IX_Decisions_PendingExpiry (the N'pending' literal satisfies its filter;
	// the session SET options filtered indexes need are go-mssqldb's defaults). Locks: X on
	// the new keys; the FK check takes a short S lock on the attempt's PK key, which this
	// transaction already holds U-locked from the fence (compatible: U and S do not
	// conflict, and it is this transaction's own lock). RCSI: no difference for an insert.
	// @p6 is nvarchar(max) text or NULL. Errors: 547 FK -> ErrBadReference (not expected
	// after the fence); 33504 -> ErrRefused.
	insert: `INSERT INTO dbo.DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt)
VALUES (@p1, @p2, @p3, @p4, NULL, @p5, @p6, @p7, N'pending', @p8, NULL, NULL, NULL, @p9);`,

	// get: PK_DecisionRequests seek, TenantId residual (and RLS). No hints: under RCSI the
	// last committed row, or this transaction's own write (Request and Answer read their
	// row back); without RCSI a short S lock. 0 rows -> ErrNotFound (missing or another
	// tenant's: the same answer).
	get: `SELECT ` + columns + ` FROM dbo.DecisionRequests WHERE TenantId = @p1 AND DecisionId = @p2;`,

	// lock: get, holding a U lock on the PK key until commit, so the check-then-update of
	// Answer cannot interleave with another answer, an attempt's end or expire (which skips
	// the row while it is held). UPDLOCK makes it a locking read under RCSI too: it waits
	// for a writer in flight and returns the latest committed row. 0 rows -> ErrNotFound.
	// Errors: 1205/1222 -> ErrRetryable.
	lock: `SELECT ` + columns + ` FROM dbo.DecisionRequests WITH (UPDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND DecisionId = @p2;`,

	// answer: PK seek of the row lock holds (U -> X); the row moves within
	// IX_Decisions_Tenant_Status (Status is a key column) and leaves
	// IX_Decisions_PendingExpiry. The WHERE repeats what the Go code checked under the lock
	// (pending, version, not expired by time at @p7), so the statement is right on its own.
	// @p8 is binary(8), compared with the rowversion without conversion. RCSI: an UPDATE
	// finds its row with locks on the latest committed version. 0 rows -> the Go code's
	// error (not expected under the U lock). Errors: 33504 -> ErrRefused; 1205 ->
	// ErrRetryable.
	answer: `UPDATE dbo.DecisionRequests SET Status = @p3, AnswerJson = @p4, ApprovalId = @p5, AnsweredBy = @p6, AnsweredAt = @p7
WHERE TenantId = @p1 AND DecisionId = @p2 AND Status = N'pending' AND Version = @p8
    AND (ExpiresAt IS NULL OR ExpiresAt > @p7);`,

	// list: the inbox, oldest first, keyset (RequestedAt, DecisionId) after (@p4, @p5),
	// TOP (@p6). @p2 is the effective status (validated to one of the five names) or NULL.
	// OPTION (RECOMPILE) embeds this call's values, so the catch-all predicates fold away
	// (as in runs' list): for pending, approved, rejected and cancelled it is one seek of
	// IX_Decisions_Tenant_Status on (TenantId, Status) whose order is the ORDER BY (no
	// sort), the cursor a seek bound, ExpiresAt a residual after the PK lookup; for expired
	// it is two seek ranges (N'expired', and N'pending' filtered on ExpiresAt <= @p3) and a
	// TOP N sort of what they return; with no status, a range seek on TenantId and a TOP N
	// sort of the tenant's decisions (no index on (TenantId, RequestedAt): the unfiltered
	// inbox costs the tenant's decision count; the pending inbox does not). The literal in
	// "@p2 = N'expired' COLLATE …" is pinned to BIN2 so a database with a case-insensitive
	// default collation cannot match another spelling. No hints: under RCSI a consistent
	// image, no locks; without RCSI short S locks. 0 rows -> an empty page. No expected
	// errors.
	list: `SELECT TOP (@p6) ` + columns + ` FROM dbo.DecisionRequests
WHERE TenantId = @p1
    AND (@p2 IS NULL OR Status = @p2 OR (@p2 = N'expired' COLLATE Latin1_General_100_BIN2 AND Status = N'pending'))
    AND (@p2 IS NULL OR (CASE WHEN Status = N'pending' AND ExpiresAt <= @p3 THEN N'expired' ELSE Status END) = @p2)
    AND (@p4 IS NULL OR RequestedAt > @p4 OR (RequestedAt = @p4 AND DecisionId > @p5))
ORDER BY RequestedAt, DecisionId
OPTION (RECOMPILE);`,

	// listByAttempt: IX_Decisions_Attempt seek on AttemptId, in (RequestedAt, DecisionId)
	// order (the clustered key completes the index key), so no sort; PK lookups for the
	// other columns, TenantId residual. RECOMPILE as in list, for the cursor bound.
	// DecisionId order is uniqueidentifier order here and text order on SQLite; each
	// dialect's comparison and ORDER BY agree, which is all a keyset needs. No hints. 0 rows
	// -> an empty page.
	listByAttempt: `SELECT TOP (@p5) ` + columns + ` FROM dbo.DecisionRequests
WHERE TenantId = @p1 AND AttemptId = @p2
    AND (@p3 IS NULL OR RequestedAt > @p3 OR (RequestedAt = @p3 AND DecisionId > @p4))
ORDER BY RequestedAt, DecisionId
OPTION (RECOMPILE);`,

	// closeForAttempt: runs in the transaction that ends the attempt, after the attempt and
	// run locks (complete, release, the reaper's take-back). IX_Decisions_Attempt seek on
	// AttemptId, PK lookups; U locks while finding rows, X on the pending ones it changes
	// (a handful per attempt). A decision an answer holds makes it wait for that short
	// transaction (which waits for nothing); a decision that expire holds likewise. RCSI:
	// an UPDATE qualifies rows on the latest committed version with locks, so an answer that
	// committed first is seen and its decision is left as answered. 0 rows is normal (no
	// pending decisions). Errors: 1205 -> ErrRetryable (the whole attempt-ending transaction
	// is retried); 33504 -> ErrRefused.
	closeForAttempt: `UPDATE dbo.DecisionRequests
SET Status = CASE WHEN ExpiresAt IS NOT NULL AND ExpiresAt <= @p3 THEN N'expired' ELSE N'cancelled' END
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'pending';`,

	// expire: across tenants (MaintenanceScope). IX_Decisions_PendingExpiry range seek
	// ExpiresAt <= @p1 (both filter terms written as literals, so the filtered index
	// matches), PK lookups; TOP (@p2) bounds the batch (no ORDER BY: any expired rows will
	// do, the rest come in the next batch). READPAST skips decisions another transaction
	// holds (an answer, an attempt ending) instead of waiting, so this statement never
	// waits on a row lock and cannot be part of a deadlock through one; a skipped decision
	// is taken in a later batch or pass, or closed by its holder. READCOMMITTEDLOCK because
	// READPAST at READ COMMITTED needs it when RCSI is on (TSQL.md); without RCSI it
	// changes nothing. ROWLOCK keeps READPAST on row locks. Modifying the secondary indexes
	// can still wait on a key lock there (documented for READPAST updates); such a wait is
	// on a short transaction. X locks on at most @p2 (500) rows, below lock escalation. 0
	// rows -> nothing to do (the loop ends). Errors: 1205/1222 -> ErrRetryable.
	expire: `UPDATE TOP (@p2) dbo.DecisionRequests WITH (ROWLOCK, READPAST, READCOMMITTEDLOCK)
SET Status = N'expired'
WHERE Status = N'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= @p1;`,
}
