package runs

// The SQL Server query set of the run-lease core. Every statement takes @p1..@pN in the
// order queries.go documents (the same argument list the SQLite statement gets) and is
// one statement, so RowsAffected is its own count (TR_Runs_Guard runs with SET NOCOUNT ON).
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks and their order, READ_COMMITTED_SNAPSHOT (RCSI),
// what 0 rows gives, and the error numbers with what MapError makes of them:
//   2601, 2627           -> *sqldb.ConflictError (Constraint holds the index name)
//   1205, 1222, 3960     -> sqldb.ErrRetryable (the transaction is run again)
//   547 FOREIGN KEY      -> sqldb.ErrBadReference; 547 CHECK -> sqldb.ErrRefused
//   33504 (RLS block), 50001/50002 (TR_Runs_Guard) -> sqldb.ErrRefused
//   sql.ErrNoRows        -> sqldb.ErrNotFound
// Everything else passes through unmapped (a 500).
//
// Conventions that hold for every statement below:
//   - Transactions are READ COMMITTED, explicitly (sqldb.once); the database may or may not
//     have READ_COMMITTED_SNAPSHOT on (Azure SQL: on), so every statement is read for both.
//   - Runs.Version and Projects.Version are rowversion: never written here.
//   - dbo.Runs has TR_Runs_Guard (AFTER UPDATE): no OUTPUT at all on it here, so Msg 334
//     cannot arise.
//   - Filtered indexes are matched only by a literal in the WHERE clause (State = 0,
//     State = 1, DeadlineAt IS NOT NULL), never a parameter.
//   - Row-level security (dbo.fn_TenantAccess on TenantId) adds a residual predicate to
//     every access of dbo.Runs and dbo.Projects; every index used below carries TenantId
//     (as a key or through the clustered key lookup). Reads filter on TenantId themselves;
//     the run updates that take no tenant (heartbeat, requeue, endLeased, endQueued,
//     requestCancel) seek the RunId the caller has just locked with lock, which did.
//   - A NULL argument arrives typed nvarchar(1) (go-mssqldb's declaration for nil), a
//     time.Time as datetimeoffset(7), a uuid.UUID as its string; comparisons convert the
//     argument to the column's type (uniqueidentifier, datetimeoffset), never the column.
//   - Lock order (DESIGN.md section 4): tenant row (claim only), then attempt row, then run
//     row, then project row. The claim's own attempt row is new, so it is exempt.

// mssqlEligible is what makes a queued run r claimable, as on SQLite: project active, no
// cancel pending, no leased run and no older queued run of its subject, and the claim's
// filters.
//
// The three subqueries carry no hints, on purpose:
//   - No READPAST: a subject's head run that another transaction holds locked must still
//     count as the head (TSQL.md, "Subject order under READPAST"); skipping it would offer
//     the subject's second run.
//   - No READCOMMITTEDLOCK: under RCSI they read the committed image as of the statement's
//     start, which is enough and never waits. A claim locked the tenant row before this
//     statement (lockTenant, held to commit), so every lease another claim of the tenant
//     made is committed before this statement starts and is in that image; a run leaving
//     LEASED (complete, release, take-back) still looks leased, and a head being ended
//     (cancel, deadline) still looks queued: the image errs only towards "not eligible".
//     Without RCSI they take short S locks and wait for in-flight writers instead of
//     skipping them, which is also correct. Waiting cannot deadlock: while this statement
//     runs, the claim holds the tenant row and, after a 2601 retry, the failed run's X lock
//     and the earlier pick's U locks on queued runs. Only setMaxLeased asks for the first;
//     only a cancel or a deadline end asks for the others, and those hold nothing else.
//   - OPENJSON needs database compatibility level 130 or higher (SQL Server 2016); below
//     that it is Msg 208 "Invalid object name 'OPENJSON'". Its [value] column is
//     nvarchar(max) and takes the collation of the JSON text, here a parameter (the
//     database default, which the column's BIN2 would already win over); it is pinned to
//     BIN2 explicitly so the match is exact and case-sensitive as on SQLite whatever the
//     database default, with no room for a collation conflict (Msg 468).
//   - RunId order (the tie-break) is SQL Server's uniqueidentifier order (last 6 bytes
//     first), not SQLite's; it is the same order IX_Runs_SubjectQueue and the ORDER BY use.
const mssqlEligible = `
        AND r.CancelRequestedAt IS NULL
        AND EXISTS (SELECT 1 FROM dbo.Projects AS pa
            WHERE pa.TenantId = r.TenantId AND pa.ProjectId = r.ProjectId AND pa.Active = 1)
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS l
            WHERE l.TenantId = r.TenantId AND l.Subject = r.Subject AND l.State = 1)
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS o
            WHERE o.TenantId = r.TenantId AND o.Subject = r.Subject AND o.State = 0
                AND (o.QueuedAt < r.QueuedAt OR (o.QueuedAt = r.QueuedAt AND o.RunId < r.RunId)))
        AND (@p5 IS NULL OR r.Kind IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p5) AS j))
        AND (@p6 IS NULL OR r.AgentId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p6) AS j))
        AND (@p7 IS NULL OR r.ProjectId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p7) AS j))
        AND (@p8 IS NULL OR r.RunId <> @p8)`

// mssqlSeekBand starts one band's seek of IX_Runs_Claim (TenantId, Band, DueAt, RunId
// WHERE State = 0; its INCLUDE list covers every column r reads, so there is no lookup):
// the window of the band's TOP (@p4) oldest eligible runs in DueAt, RunId order, which is
// the index order, so no sort.
//
// Hints: READPAST, ROWLOCK, READCOMMITTEDLOCK and no UPDLOCK. The window is read with
// short S locks, skipping rows another transaction holds X-locked (an enqueue, requeue,
// cancel or deadline end in flight) instead of waiting for them. READCOMMITTEDLOCK makes
// this a locking read under RCSI too, which READPAST requires there (Microsoft's table
// hint reference: with READ_COMMITTED_SNAPSHOT on, READPAST at READ COMMITTED needs
// READCOMMITTEDLOCK). Without RCSI the hint changes nothing.
//
// Why the window is not read WITH (UPDLOCK): U locks are held to commit on every row the
// seek returns, and the seek returns every queued run it passes over on the way to K
// eligible ones, including all the runs queued behind a leased or older sibling. A tenant
// with a deep backlog on a few subjects would hold thousands of U locks per claim, and at
// about 5,000 locks SQL Server escalates to a table lock, which for U locks is an X lock on
// dbo.Runs: every tenant would stop until the claim commits. Locking the window also buys
// nothing against other claims, which the tenant row lock already serialises. Only window
// rows are U-locked (mssqlPick), at most K of them, all eligible runs.
const mssqlSeekBand = `SELECT TOP (@p4) r.RunId, r.ProjectId, r.DueAt
        FROM dbo.Runs AS r WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE r.TenantId = @p1 AND r.State = 0 AND r.Band = `

const mssqlSeekOrder = `
        ORDER BY r.DueAt, r.RunId`

// mssqlPick weighs the window w (RunId, ProjectId, DueAt) by project load, fewest leased
// runs first, then age, and locks the one it returns.
//
// The CROSS APPLY re-reads each window row through PK_Runs WITH (UPDLOCK, READPAST): the
// row it returns is U-locked until commit, so no cancel or deadline end (both lock the run
// with UPDLOCK first) can end it between this statement and the lease UPDATE, and the
// UPDATE's "AND State = 0" always finds it. A window row that another transaction holds
// (U or X) is skipped and the next row of the order is tried; State = 0 re-checks a row
// ended since the window was read. FORCESEEK on PK_Runs keeps this access a nested-loop
// seek of one row per window row: a scan here would U-lock the table. The apply is applied
// to at most K rows (TOP in w is a barrier no join is pushed through); depending on where
// the optimizer puts the sort, it locks the first row that qualifies or every window row
// (at most K, all of them eligible runs).
//
// LeasedCount is read without hints: under RCSI the last committed count; without RCSI a
// short S lock that waits for a complete or claim in flight on that project. It only
// orders the choice.
const mssqlPick = `
SELECT TOP (1) w.RunId
FROM w
INNER JOIN dbo.Projects AS p ON p.TenantId = @p1 AND p.ProjectId = w.ProjectId
CROSS APPLY (
    SELECT x.RunId
    FROM dbo.Runs AS x WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK (PK_Runs (RunId)))
    WHERE x.RunId = w.RunId AND x.TenantId = @p1 AND x.State = 0
) AS k
ORDER BY p.LeasedCount, w.DueAt, w.RunId;`

// Claim candidates: one statement per effective band (DESIGN.md section 4), each returning
// one column, RunId, or no row.
//
// Reading check (all three):
//   - Index: IX_Runs_Claim seek per band (covering); per candidate, PK_Projects (Active),
//     UX_Runs_LeasedSubject (leased sibling), IX_Runs_SubjectQueue (older sibling); then
//     PK_Projects (LeasedCount) and PK_Runs (the U lock) for the window rows.
//   - Locks, in order: runs after the tenant row (lockTenant) and the leased count; short S
//     locks on window keys (READPAST skips X-locked ones); the subqueries' S locks (without
//     RCSI only); then U on PK_Runs keys of window rows (the chosen one, at most K), held
//     to commit. The lease UPDATE converts the chosen run's U to X, and projectLeased then
//     takes the project row: tenant -> run -> project, as every other claim does.
//   - RCSI: window and pick are locking reads (READCOMMITTEDLOCK / UPDLOCK); subqueries and
//     the project reads are versioned (see mssqlEligible for why that is safe).
//   - 0 rows: sql.ErrNoRows -> ErrNotFound: the claim goes on to the next band.
//   - Errors: 208 below compatibility level 130 (OPENJSON), unmapped; 1205 -> ErrRetryable.
//     A skipped row is never an error. 2601 cannot come from here; it comes from the lease
//     UPDATE, and the Go code then seeks again with @p8 = that run.
//
// Band 0 (INTERACTIVE): its due runs.
const mssqlClaimInteractive = `WITH w AS (
    ` + mssqlSeekBand + `0 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

// Band group 1: BATCH runs due by @p2 together with BACKGROUND runs due by @p3 (aged: due
// for at least the band aging). Each band is its own seek of IX_Runs_Claim (the band is a
// key column, so no OR), each TOP (@p4); the window is the TOP (@p4) oldest of both, as on
// SQLite. ORDER BY inside a UNION branch needs the TOP and a derived table around it.
const mssqlClaimBatch = `WITH w AS (
    SELECT TOP (@p4) c.RunId, c.ProjectId, c.DueAt
    FROM (
        SELECT b1.RunId, b1.ProjectId, b1.DueAt FROM (
        ` + mssqlSeekBand + `1 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
        ) AS b1
        UNION ALL
        SELECT b2.RunId, b2.ProjectId, b2.DueAt FROM (
        ` + mssqlSeekBand + `2 AND r.DueAt <= @p3` + mssqlEligible + mssqlSeekOrder + `
        ) AS b2
    ) AS c
    ORDER BY c.DueAt, c.RunId
)` + mssqlPick

// Band 2 (BACKGROUND): its due runs.
const mssqlClaimBackground = `WITH w AS (
    ` + mssqlSeekBand + `2 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

var mssqlQueries = queries{
	// insert: a new queued run (State 0). @p10 Input is nvarchar text (JSONText sends a
	// string) or NULL; HolderId, LeaseSeconds, LeasedUntil, EndedAt, Outcome, ErrorCode,
	// ErrorMessage and CancelRequestedAt start NULL; Version is stamped by the server.
	// Index: writes PK_Runs and every index; UX_Runs_Idempotency and UX_Runs_ContinuedFrom
	// only when the key is not NULL. Locks: X on the new keys; an uncommitted duplicate in a
	// unique index makes it wait for that transaction, then fail or succeed. FK checks take
	// short S locks on the tenant, project and parent rows (locking reads under RCSI too).
	// RCSI: no difference for an insert. Errors: 2601 on UX_Runs_Idempotency (Enqueue
	// answers with the existing run) or UX_Runs_ContinuedFrom (Continue does) ->
	// ConflictError, the transaction stays usable (XACT_ABORT is OFF on the session); 547 FK
	// (unknown project or parent) -> ErrBadReference; 547 CHECK -> ErrRefused; 33504 (row
	// outside the session tenant) -> ErrRefused.
	insert: `INSERT INTO dbo.Runs (RunId, TenantId, ProjectId, EnvironmentId, Subject, Kind, AgentId, StepId, SnapshotId,
    Input, Band, State, Epoch, Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, DeadlineAt, IdempotencyKey,
    ParentRunId, Depth, ContinuedFromRunId, CreatedBy)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, 0, @p12, @p13, @p14, @p15, @p16, @p17, @p18, @p19,
    @p20, @p21, @p22, @p23);`,

	// get: PK_Runs seek, TenantId residual (and RLS). No hints: under RCSI the last
	// committed row (or this transaction's own change, as the claim reads its lease back);
	// without RCSI a short S lock. 0 rows -> ErrNotFound (missing or another tenant's).
	get: `SELECT ` + runColumns + ` FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// lock: get, holding a U lock on the PK_Runs key until commit; the second lock of
	// attempt-then-run in the fence and the reaper, the only lock of cancel, continue and
	// the deadline end. UPDLOCK makes it a locking read under RCSI as well: it waits for a
	// writer in flight and returns the latest committed row (and Microsoft's hint reference
	// says READCOMMITTEDLOCK is ignored beside UPDLOCK, so it is not written). U locks do not
	// block plain readers. 0 rows -> ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	lock: `SELECT ` + runColumns + ` FROM dbo.Runs WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1 AND RunId = @p2;`,

	// byIdempotency: UX_Runs_Idempotency seek (TenantId, IdempotencyKey), then a PK_Runs
	// lookup. "IdempotencyKey IS NOT NULL" repeats the index's filter so the filtered index
	// matches whatever the optimizer infers from "= @p2". No hints: read before the insert,
	// whose unique index is the real guard; under RCSI the committed row, which after a 2601
	// is there (the duplicate's transaction had committed). 0 rows -> ErrNotFound.
	byIdempotency: `SELECT ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND IdempotencyKey = @p2 AND IdempotencyKey IS NOT NULL;`,

	// continuation: UX_Runs_ContinuedFrom seek, filter repeated as above, PK_Runs lookup,
	// TenantId residual. Read while the old run is U-locked (lock), so two continues of one
	// run are already serialised; the unique index is the backstop (2601 -> ConflictError).
	// 0 rows -> ErrNotFound.
	continuation: `SELECT ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND ContinuedFromRunId = @p2 AND ContinuedFromRunId IS NOT NULL;`,

	// projectActive: PK_Projects seek; Active is bit (scans into bool). No hints. 0 rows ->
	// ErrNotFound (Enqueue answers unknown_project).
	// PK seek of IdempotencyTombstones (TenantId, IdempotencyKey); no locks kept; under RCSI
	// reads the last committed tombstone; 0 rows is sql.ErrNoRows -> NotFound (no purge).
	tombstone:     `SELECT RunId, PurgedAt FROM dbo.IdempotencyTombstones WHERE TenantId = @p1 AND IdempotencyKey = @p2;`,
	projectActive: `SELECT Active FROM dbo.Projects WHERE TenantId = @p1 AND ProjectId = @p2;`,

	// lockTenant: the budget hold. PK_Tenants seek; UPDLOCK takes a U lock on the tenant's
	// key and holds it until the transaction ends, whatever the isolation level (that is
	// what UPDLOCK means; it is not released at the end of the statement like an S lock), so
	// every claim of the tenant queues here until the one before it commits or rolls back.
	// No HOLDLOCK: it would add serializable key-range semantics, which only matter for a
	// row that does not exist (locking its absence); the tenant row always exists for a
	// caller whose key was found (FK_ApiKeys_Tenants), and on an existing row of a unique
	// index HOLDLOCK adds nothing. Under RCSI UPDLOCK reads the latest committed row.
	// Readers (FK checks of inserts, S locks) are not blocked by U; setMaxLeased (X) waits.
	// 0 rows -> ErrNotFound (the claim fails). Errors: 1205/1222 -> ErrRetryable.
	lockTenant: `SELECT MaxLeasedRuns FROM dbo.Tenants WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1;`,

	// countLeased: seek of UX_Runs_LeasedSubject (TenantId, Subject WHERE State = 1), which
	// covers it (the literal State = 1 matches the filter). No hints. Under RCSI the count
	// as of this statement's start: every lease was made by a claim of this tenant that
	// committed before lockTenant returned, so none is missed; a run leaving LEASED in
	// flight is still counted (errs towards holding the budget). Without RCSI it waits for
	// such a writer instead (which never waits for the tenant row). Always one row.
	countLeased: `SELECT COUNT(*) FROM dbo.Runs WHERE TenantId = @p1 AND State = 1;`,

	claimCandidates: [3]string{mssqlClaimInteractive, mssqlClaimBatch, mssqlClaimBackground},

	// lease: PK_Runs seek. The row is U-locked by the candidate statement, so State = 0
	// still holds and this converts U to X; the row leaves IX_Runs_Claim and
	// IX_Runs_SubjectQueue and enters UX_Runs_LeasedSubject and IX_Runs_LeaseExpiry.
	// Epoch + 1 is the only Epoch change TR_Runs_Guard allows (0 -> 1). An UPDATE finds its
	// rows with U locks on the latest committed version under RCSI too. 0 rows: "no longer
	// queued" (not expected under the U lock). Errors: 2601 on UX_Runs_LeasedSubject ->
	// ConflictError; the Go code retries with @p8 = this run (the statement is rolled back,
	// the transaction stays usable; its X lock on this run is kept until commit). 50002 ->
	// ErrRefused and, raised in a trigger, the end of the transaction.
	lease: `UPDATE dbo.Runs SET State = 1, Epoch = Epoch + 1, HolderId = @p3, LeaseSeconds = @p4, LeasedUntil = @p5
WHERE TenantId = @p1 AND RunId = @p2 AND State = 0;`,

	// projectLeased: PK_Projects seek, X lock on the project row until commit (after the run
	// row: tenant -> run -> project in the claim, attempt -> run -> project elsewhere).
	// Version is stamped by the server. 0 rows is ignored by the Go code (the FK makes it
	// impossible). Errors: 547 CHECK (LeasedCount >= 0) -> ErrRefused; 1205 -> ErrRetryable.
	projectLeased: `UPDATE dbo.Projects SET LeasedCount = LeasedCount + @p3 WHERE TenantId = @p1 AND ProjectId = @p2;`,

	// heartbeat: PK_Runs seek; run as the fence's write, under the attempt's and the run's
	// U locks, so exactly one row (exec1). X on the run and on its IX_Runs_LeaseExpiry keys.
	// 1 -> 1 with the same Epoch passes TR_Runs_Guard. RCSI: an UPDATE reads the latest
	// committed row. 0 rows -> exec1's error. Errors: 50002 -> ErrRefused; 1205 -> ErrRetryable.
	heartbeat: `UPDATE dbo.Runs SET LeasedUntil = @p3, LeaseSeconds = @p4 WHERE RunId = @p1 AND Epoch = @p2 AND State = 1;`,

	// requeue: PK_Runs seek. "(@p5 IS NULL OR LeasedUntil < @p5)" is the reaper's
	// conditional take-back (NULL: a holder's release, unconditional). The row leaves
	// UX_Runs_LeasedSubject and IX_Runs_LeaseExpiry and re-enters IX_Runs_Claim and
	// IX_Runs_SubjectQueue with its old QueuedAt, so it is its subject's head again. Locks:
	// after the attempt and run U locks, X on the run; then the project row (unleased).
	// 0 rows -> giveBack reports ErrNotFound (the reaper lost the race: rolls back).
	// Errors: 50002 -> ErrRefused; 1205 -> ErrRetryable.
	requeue: `UPDATE dbo.Runs SET State = 0, DueAt = @p3, Attempt = @p4, LeasedUntil = NULL
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p5 IS NULL OR LeasedUntil < @p5);`,

	// endLeased: as requeue, ending the run (1 -> 2). CK_Runs_Outcome checks @p3 and
	// CK_Runs_EndedHasOutcome the pair (547 CHECK -> ErrRefused). 0 rows -> exec1's error
	// (complete) or ErrNotFound from giveBack (reaper).
	endLeased: `UPDATE dbo.Runs SET State = 2, Outcome = @p3, EndedAt = @p4, Attempt = @p5, LeasedUntil = NULL
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p6 IS NULL OR LeasedUntil < @p6);`,

	// endQueued: PK_Runs seek, after lock (U) on the run: cancel and the deadline end. The
	// row leaves IX_Runs_Claim, IX_Runs_SubjectQueue and IX_Runs_QueuedDeadline. 0 -> 2 with
	// the same Epoch passes the trigger. 0 rows -> exec1's error. Errors: 547 CHECK ->
	// ErrRefused; 1205 -> ErrRetryable.
	endQueued: `UPDATE dbo.Runs SET State = 2, Outcome = @p2, EndedAt = @p3 WHERE RunId = @p1 AND State = 0;`,

	// requestCancel: PK_Runs seek, after lock (U) on the run. 1 -> 1, same Epoch. 0 rows ->
	// exec1's error. Errors: 1205 -> ErrRetryable.
	requestCancel: `UPDATE dbo.Runs SET CancelRequestedAt = @p2 WHERE RunId = @p1 AND State = 1 AND CancelRequestedAt IS NULL;`,

	// list: newest first, keyset (QueuedAt DESC, RunId DESC) after (@p6, @p7), TOP (@p8).
	// Index: IX_Runs_Tenant_Queued (TenantId, QueuedAt, RunId) read backwards, PK_Runs
	// lookups for the other columns. OPTION (RECOMPILE): the optional filters are "catch-all"
	// predicates; a cached plan has to serve every combination (every filter NULL included)
	// and cannot seek on the cursor. Recompiling embeds this call's values, so the NULL
	// branches fold away, the cursor becomes a seek bound, and "State = @p2" with a value
	// can even match a filtered index. It costs a compile per call; a listing is not a hot
	// path. No hints: under RCSI a consistent image, no locks; without RCSI short S locks.
	// @p9 (agent) is a residual after the lookup; @p10 (queued from) bounds the backward
	// range scan of IX_Runs_Tenant_Queued from below, so a time window seeks both ends.
	// 0 rows -> an empty page. No expected errors.
	list: `SELECT TOP (@p8) ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND (@p2 IS NULL OR State = @p2) AND (@p3 IS NULL OR Subject = @p3)
    AND (@p4 IS NULL OR ProjectId = @p4) AND (@p5 IS NULL OR Kind = @p5)
    AND (@p9 IS NULL OR AgentId = @p9) AND (@p10 IS NULL OR QueuedAt >= @p10)
    AND (@p6 IS NULL OR QueuedAt < @p6 OR (QueuedAt = @p6 AND RunId < @p7))
ORDER BY QueuedAt DESC, RunId DESC
OPTION (RECOMPILE);`,

	// expiredLeases: across tenants (MaintenanceScope: the RLS bypass). Index:
	// IX_Runs_LeaseExpiry (LeasedUntil WHERE State = 1; literal State = 1 matches), range
	// LeasedUntil < @p1 in index order, PK_Runs lookups for TenantId and Epoch. READPAST
	// (with READCOMMITTEDLOCK, which READPAST needs under RCSI, and ROWLOCK): a lease being
	// renewed or taken back right now is skipped; the next tick sees it again. Short S
	// locks, none held. 0 rows -> an empty batch.
	expiredLeases: `SELECT TOP (@p2) RunId, TenantId, Epoch FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 1 AND LeasedUntil < @p1
ORDER BY LeasedUntil;`,

	// overdueQueued: across tenants. Index: IX_Runs_QueuedDeadline (DeadlineAt WHERE State = 0
	// AND DeadlineAt IS NOT NULL; both literals repeated), PK_Runs lookups for TenantId.
	// READPAST as expiredLeases: a run being claimed or cancelled is skipped; endOverdue
	// re-checks under its own lock. 0 rows -> an empty batch.
	overdueQueued: `SELECT TOP (@p2) RunId, TenantId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 0 AND DeadlineAt IS NOT NULL AND DeadlineAt < @p1
ORDER BY DeadlineAt;`,

	// getLock: PK_TaskRunLocks seek WITH (UPDLOCK, HOLDLOCK, ROWLOCK). UPDLOCK holds the row
	// until commit, so release's check-then-delete and acquire's check-then-update cannot
	// interleave with another acquire. HOLDLOCK (serializable for this table only) matters
	// when the lock row is missing: it takes a RangeS-U lock on the key range where the row
	// would go, and RangeS-U conflicts with RangeS-U, so a second acquire of the same
	// missing lock waits here until the first commits, then reads its row and answers
	// lock_held (instead of both inserting and the second failing with 2627, which the Go
	// code still handles). The range may cover neighbouring missing keys of the same
	// tenant's gap: those acquires wait briefly too. Under RCSI these hints make it a locking
	// read. 0 rows -> ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	getLock: `SELECT TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt
FROM dbo.TaskRunLocks WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	// insertLock: X on the new PK_TaskRunLocks key (RangeI-N within the range getLock
	// locked). Errors: 2627 (PK) -> ConflictError, the transaction stays usable; 547 FK
	// (tenant) -> ErrBadReference; 33504 -> ErrRefused.
	insertLock: `INSERT INTO dbo.TaskRunLocks (TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p6);`,

	// updateLock: PK seek, after getLock's U lock: exactly one row (exec1).
	updateLock: `UPDATE dbo.TaskRunLocks SET HolderId = @p4, HeldUntil = @p5, UpdatedAt = @p6
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	// deleteLock: PK seek, after getLock's U lock. 0 rows is not an error.
	deleteLock: `DELETE FROM dbo.TaskRunLocks WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,
}
