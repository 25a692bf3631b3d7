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
//   - Lock order: the attempt row first, always. A holder's request locks the attempt, then
//     the run (the fence), then writes its new decision row and the attempt row it already
//     holds. closeForAttempt runs inside a transaction that holds the attempt and the run,
//     and takes decision rows last. An answer locks the attempt (attempts.Lock, U), then the
//     decision (lock, U), writes the decision, then the attempt's phase (restorePhase). An
//     expiry locks the attempt, then writes its decisions, then its phase. Every path that
//     takes a decision row of an attempt holds that attempt's U lock first, so two of them
//     serialise on the attempt and no cycle can form through decision rows; the only read
//     that touches a decision before its attempt (get, at the start of an answer) takes no
//     lock that lasts.
//   - Reads that return decisions join the attempt (PK_ExecutionAttempts, an inner join:
//     the foreign key guarantees the row) and its run (PK_Runs, a left join) by key for
//     RunId, ProjectId, AgentId and Subject: two seeks per decision, both rows of the same
//     tenant (the joins repeat TenantId, and RLS filters both tables). A decision whose run
//     retention has just deleted (its attempt and decision rows go in the chunks that
//     follow) reads with a NULL Subject for that moment.
//   - SESSION_CONTEXT in parallel plans (TSQL.md): the maintenance-scope read (due) and
//     the inbox lists carry OPTION (MAXDOP 1); the rest are key seeks that get serial plans.
var mssqlQueries = queries{
	// insert: a new pending decision. Index: writes PK_DecisionRequests (a COMB id appends
	// at the end), IX_Decisions_Tenant_Status, IX_Decisions_Attempt and, with an
	// ExpiresAt, IX_Decisions_PendingExpiry (the N'pending' literal satisfies its filter;
	// the session SET options filtered indexes need are go-mssqldb's defaults). Locks: X on
	// the new keys; the FK check takes a short S lock on the attempt's PK key, which this
	// transaction already holds U-locked from the fence (compatible: U and S do not
	// conflict, and it is this transaction's own lock). RCSI: no difference for an insert.
	// @p6 is nvarchar(max) text or NULL; @p10 an int (int32 in Go) into PriorPhase int.
	// Errors: 547 FK -> ErrBadReference (not expected after the fence); 33504 -> ErrRefused.
	insert: `INSERT INTO dbo.DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt, PriorPhase)
VALUES (@p1, @p2, @p3, @p4, NULL, @p5, @p6, @p7, N'pending', @p8, NULL, NULL, NULL, @p9, @p10);`,

	// get: PK_DecisionRequests seek, TenantId residual (and RLS); PK seeks of the attempt
	// and the run (mssqlFrom). No hints: under RCSI the last committed rows, or this
	// transaction's own write (Request and Answer read their row back); without RCSI short
	// S locks on the three rows: compatible with the U locks this transaction holds on the
	// attempt; a run X-locked by a cancel in flight (which locks nothing else) is waited for
	// briefly. 0 rows -> ErrNotFound (missing or another tenant's: the same answer).
	get: mssqlRead + ` WHERE d.TenantId = @p1 AND d.DecisionId = @p2;`,

	// lock: the decision's own columns, holding a U lock on the PK key until commit, so the
	// check-then-update of Answer cannot interleave with another answer, an attempt's end or
	// an expiry (all of which hold the attempt's U lock first, as Answer does before this,
	// so in practice they already wait there). UPDLOCK makes it a locking read under RCSI
	// too: it waits for a writer in flight and returns the latest committed row. 0 rows ->
	// ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	lock: `SELECT ` + columns + ` FROM dbo.DecisionRequests AS d WITH (UPDLOCK, ROWLOCK)
WHERE d.TenantId = @p1 AND d.DecisionId = @p2;`,

	// byIDs: the attempt timeline's decision entries. OPENJSON(@p2) yields at most one page
	// of ids (@p2 declared nvarchar(max) for every page size, sqldb.Dialect.JSON; nvarchar
	// [value], cast to uniqueidentifier, so the column is never converted),
	// each a PK_DecisionRequests seek, TenantId residual, then the attempt and run seeks. No
	// hints (a read in db.Read): under RCSI the committed image, no locks; without RCSI
	// short S locks. 0 rows: the entries were purged between the timeline's two statements;
	// the page omits them. OPENJSON needs compatibility level 130 (Msg 208 below it).
	byIDs: mssqlRead + `
WHERE d.DecisionId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND d.TenantId = @p1;`,

	// answer: PK seek of the row lock holds (U -> X); the row moves within
	// IX_Decisions_Tenant_Status (Status is a key column) and leaves
	// IX_Decisions_PendingExpiry. The WHERE repeats what the Go code checked under the lock
	// (pending, version, not expired by time at @p7), so the statement is right on its own.
	// @p8 is binary(8), compared with the rowversion without conversion. RCSI: an UPDATE
	// finds its row with locks on the latest committed version. 0 rows -> the Go code
	// re-reads under the lock and answers decision_closed or precondition_failed (not
	// expected under the U lock). Errors: 33504 -> ErrRefused; 1205 -> ErrRetryable.
	answer: `UPDATE dbo.DecisionRequests SET Status = @p3, AnswerJson = @p4, ApprovalId = @p5, AnsweredBy = @p6, AnsweredAt = @p7
WHERE TenantId = @p1 AND DecisionId = @p2 AND Status = N'pending' AND Version = @p8
    AND (ExpiresAt IS NULL OR ExpiresAt > @p7);`,

	// list: the inbox with a status, oldest first, keyset (RequestedAt, DecisionId) after
	// (@p5, @p6), TOP (@p7). @p2 is the effective status (validated to one of the five
	// names). OPTION (RECOMPILE) embeds this call's values, so the catch-all predicates fold
	// away: for pending, approved, rejected and cancelled it is one seek of
	// IX_Decisions_Tenant_Status on (TenantId, Status) whose order is the ORDER BY (no sort),
	// the cursor a seek bound, ExpiresAt a residual after the PK lookup; for expired it is
	// two seek ranges (N'expired', and N'pending' filtered on ExpiresAt <= @p3) and a TOP N
	// sort of what they return. Each row then seeks its attempt and run; a project filter
	// (@p4) is a residual on the attempt, so a page of one project reads the tenant's
	// decisions of that status until it fills (no index leads DecisionRequests by project;
	// the status seek bounds it). The literal in "@p2 = N'expired' COLLATE …" is pinned to
	// BIN2 so a database with a case-insensitive default collation cannot match another
	// spelling. MAXDOP 1: a wide read in tenant scope (TSQL.md, SESSION_CONTEXT in parallel
	// plans). No hints: under RCSI a consistent image, no locks; without RCSI short S locks.
	// 0 rows -> an empty page. No expected errors.
	list: mssqlRead + `
WHERE d.TenantId = @p1
    AND (d.Status = @p2 OR (@p2 = N'expired' COLLATE Latin1_General_100_BIN2 AND d.Status = N'pending'))
    AND (CASE WHEN d.Status = N'pending' AND d.ExpiresAt <= @p3 THEN N'expired' ELSE d.Status END) = @p2
    AND (@p4 IS NULL OR a.ProjectId = @p4)
    AND (@p5 IS NULL OR d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))
ORDER BY d.RequestedAt, d.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// listPendingFirst: the inbox without a status, pending first. Two branches of at most a
	// page each, merged by the outer TOP (@p7) ORDER BY (a sort of at most two pages):
	//   - Rank 0, pending not past ExpiresAt: IX_Decisions_Tenant_Status seek on (TenantId,
	//     N'pending') in (RequestedAt, DecisionId) order (the index's key order), ExpiresAt a
	//     residual after the PK lookup, so the branch's TOP stops after a page;
	//   - Rank 1, everything else: Status <> N'pending' is two seek ranges of the same index
	//     (below and above N'pending'), OR'd with the pending rows past ExpiresAt, and a TOP N
	//     sort: a page costs the tenant's closed decisions after the cursor (the unfiltered
	//     inbox's known cost; the pending inbox, the common one, does not pay it).
	// The cursor: @p4 NULL starts; 0 continues the pending branch after (@p5, @p6) and takes
	// the second branch from its start; 1 skips the pending branch and continues the second.
	// RECOMPILE folds these catch-alls and the project filter (@p3, a residual on the
	// attempt, as in list). Rank is an int; both branches return the same columns. MAXDOP 1
	// as in list. No hints: under RCSI a consistent image per statement; without RCSI short
	// S locks. 0 rows -> an empty page. No expected errors.
	listPendingFirst: `SELECT TOP (@p7) u.* FROM (
    SELECT b0.* FROM (
        SELECT TOP (@p7) 0 AS Rank, ` + columns + `, ` + sourceColumns + mssqlFrom + `
        WHERE d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p2)
            AND (@p3 IS NULL OR a.ProjectId = @p3)
            AND (@p4 IS NULL OR (@p4 = 0 AND (d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))))
        ORDER BY d.RequestedAt, d.DecisionId
    ) AS b0
    UNION ALL
    SELECT b1.* FROM (
        SELECT TOP (@p7) 1 AS Rank, ` + columns + `, ` + sourceColumns + mssqlFrom + `
        WHERE d.TenantId = @p1 AND (d.Status <> N'pending' OR d.ExpiresAt <= @p2)
            AND (@p3 IS NULL OR a.ProjectId = @p3)
            AND (@p4 IS NULL OR @p4 = 0 OR d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))
        ORDER BY d.RequestedAt, d.DecisionId
    ) AS b1
) AS u
ORDER BY u.Rank, u.RequestedAt, u.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// listByAttempt: IX_Decisions_Attempt seek on AttemptId, in (RequestedAt, DecisionId)
	// order (the clustered key completes the index key), so no sort; PK lookups for the
	// other columns, TenantId residual; the attempt and run seeks (one attempt: the same two
	// rows each time). RECOMPILE as in list, for the cursor bound. DecisionId order is
	// uniqueidentifier order here and text order on SQLite; each dialect's comparison and
	// ORDER BY agree, which is all a keyset needs. No hints. 0 rows -> an empty page.
	listByAttempt: mssqlRead + `
WHERE d.TenantId = @p1 AND d.AttemptId = @p2
    AND (@p3 IS NULL OR d.RequestedAt > @p3 OR (d.RequestedAt = @p3 AND d.DecisionId > @p4))
ORDER BY d.RequestedAt, d.DecisionId
OPTION (RECOMPILE);`,

	// newestPrior: IX_Decisions_Attempt backward seek on AttemptId (its key order is
	// RequestedAt, then the clustered DecisionId), TOP (1), one PK lookup for PriorPhase and
	// the TenantId residual. Runs under the attempt's U lock (a request's fence, an answer,
	// an expiry), so no writer of this attempt's decisions is in flight; no hints: under RCSI
	// the last committed rows and this transaction's own writes; without RCSI a short S
	// lock. 0 rows -> ErrNotFound, which the Go code reads as "no decision". No expected
	// errors.
	newestPrior: `SELECT TOP (1) PriorPhase FROM dbo.DecisionRequests
WHERE AttemptId = @p2 AND TenantId = @p1 ORDER BY RequestedAt DESC, DecisionId DESC;`,

	// countPending: IX_Decisions_Attempt seek on AttemptId with PK lookups for Status and
	// ExpiresAt, TOP (@p4) of them: at most the cap of rows read. Runs under the attempt's U
	// lock (the request's fence), so no other request of this attempt counts at the same time
	// and the cap holds. No expected errors.
	countPending: `SELECT COUNT(*) FROM (SELECT TOP (@p4) 1 AS One FROM dbo.DecisionRequests
WHERE AttemptId = @p2 AND TenantId = @p1 AND Status = N'pending' AND (ExpiresAt IS NULL OR ExpiresAt > @p3)) AS p;`,

	// restorePhase: PK_ExecutionAttempts seek of the attempt this transaction holds
	// U-locked (attempts.Lock), converted to X; the NOT EXISTS is an IX_Decisions_Attempt
	// seek on AttemptId with PK lookups for Status and ExpiresAt (the attempt's decisions: a
	// handful), which sees this transaction's own close of the decision. Phase is not in
	// any index, so only the clustered row changes (and its rowversion, which is the point:
	// the change feed shows the new phase). The literals 0 (running) and 5
	// (awaiting_decision) are the enum positions (DESIGN.md 7a) and keep the write
	// conditional on what the Go code read under the lock. RCSI: an UPDATE qualifies on the
	// latest committed version with locks; the subquery reads under the UPDATE's own
	// locking semantics (read committed). 0 rows: the attempt waits on another decision, or
	// has moved on: nothing to do. Errors: 33504 -> ErrRefused (not expected: the session's
	// tenant); 1205 -> ErrRetryable.
	restorePhase: `UPDATE dbo.ExecutionAttempts SET Phase = @p3
WHERE TenantId = @p1 AND AttemptId = @p2 AND State = 0 AND Phase = 5
    AND NOT EXISTS (SELECT 1 FROM dbo.DecisionRequests AS d
        WHERE d.AttemptId = @p2 AND d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p4));`,

	// closeForAttempt: runs in the transaction that ends the attempt, after the attempt and
	// run locks (complete, release, the reaper's take-back). IX_Decisions_Attempt seek on
	// AttemptId, PK lookups; U locks while finding rows, X on the pending ones it changes
	// (a handful per attempt). Every other writer of this attempt's decisions holds the
	// attempt's U lock first, so nothing here waits on a decision row. RCSI: an UPDATE
	// qualifies rows on the latest committed version with locks, so an answer that
	// committed first is seen and its decision is left as answered. 0 rows is normal (no
	// pending decisions). Errors: 1205 -> ErrRetryable (the whole attempt-ending transaction
	// is retried); 33504 -> ErrRefused.
	closeForAttempt: `UPDATE dbo.DecisionRequests
SET Status = CASE WHEN ExpiresAt IS NOT NULL AND ExpiresAt <= @p3 THEN N'expired' ELSE N'cancelled' END
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'pending';`,

	// due: across tenants (MaintenanceScope, the documented RLS bypass), read-only.
	// IX_Decisions_PendingExpiry range seek ExpiresAt <= @p1 (both filter terms written as
	// literals, so the filtered index matches), PK lookups for TenantId and AttemptId, a
	// distinct (hash or sort) and TOP (@p2): at most @p2 attempts, each expired by its own
	// short tenant-scoped transaction afterwards (expireForAttempt). The rows read are all
	// expired pending decisions, the work about to be done, so the read is bounded by it.
	// No hints: under RCSI the committed image, no locks (a decision an answer is closing is
	// seen as pending and found already closed by expireForAttempt); without RCSI short S
	// locks, which wait for such an answer's short transaction. MAXDOP 1: maintenance scope
	// (TSQL.md, SESSION_CONTEXT in parallel plans). 0 rows -> nothing to do. Errors:
	// 1205/1222 -> ErrRetryable (only without RCSI).
	due: `SELECT DISTINCT TOP (@p2) TenantId, AttemptId FROM dbo.DecisionRequests
WHERE Status = N'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= @p1
OPTION (MAXDOP 1);`,

	// expireForAttempt: in the attempt's tenant scope, after attempts.Lock holds the
	// attempt (U). IX_Decisions_Attempt seek on AttemptId, PK lookups for the residuals; U
	// then X on the pending decisions past @p3 (a handful); the rows leave
	// IX_Decisions_PendingExpiry and move within IX_Decisions_Tenant_Status. Every other
	// writer of these rows holds the attempt's U lock first, so nothing here waits on a
	// decision row. RCSI: an UPDATE qualifies on the latest committed version with locks, so
	// a decision answered or cancelled since due read it is left alone. 0 rows: another
	// replica or an answer closed them first. Errors: 1205 -> ErrRetryable; 33504 ->
	// ErrRefused (not expected).
	expireForAttempt: `UPDATE dbo.DecisionRequests SET Status = N'expired'
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= @p3;`,
}

// mssqlFrom is a decision with its attempt and run, each joined by its primary key.
const mssqlFrom = ` FROM dbo.DecisionRequests AS d
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
LEFT OUTER JOIN dbo.Runs AS r ON r.RunId = a.RunId AND r.TenantId = a.TenantId`

// mssqlRead is the select list and joins of every read that returns decisions.
const mssqlRead = `SELECT ` + columns + `, ` + sourceColumns + mssqlFrom
