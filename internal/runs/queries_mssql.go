package runs

// The SQL Server query set of the run-lease core. Every statement takes @p1..@pN in the
// order queries.go documents (the same argument list the SQLite statement gets).
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
//     Under RCSI each statement reads the committed image as of its own start (plus this
//     transaction's changes); a statement that starts after a lock was granted therefore
//     sees everything the lock's previous holders committed.
//   - Runs.Version is rowversion: never written here. dbo.Runs has TR_Runs_Guard (AFTER
//     UPDATE), so an UPDATE that answers with the row uses OUTPUT ... INTO @t (Msg 334), then
//     SELECT from @t, in the same call; OUTPUT shows the row as the UPDATE left it (the
//     trigger changes nothing). RowsAffected is not relied on for those.
//   - Filtered indexes are matched only by a literal in the WHERE clause (State = 0,
//     State = 1, SubjectHead = 1, DeadlineAt IS NOT NULL), never a parameter.
//   - Row-level security (dbo.fn_TenantAccess on TenantId) adds a residual predicate to
//     every access of the tenant tables; every index used below carries TenantId (as a key
//     or through the clustered key lookup). Reads filter on TenantId themselves; the run
//     updates that take no tenant seek a RunId the caller has just read under its tenant.
//   - A NULL argument arrives typed nvarchar(1) (go-mssqldb's declaration for nil), a
//     time.Time as datetimeoffset(7), a uuid.UUID as its string; comparisons convert the
//     argument to the column's type (uniqueidentifier, datetimeoffset), never the column.
//     JSON lists arrive as nvarchar(max) (sqldb.Dialect.JSON), so the claim's plans do not
//     multiply with the lists' lengths.
//   - The reaper's cross-tenant statements (MaintenanceScope: expiredLeases, overdueQueued,
//     fenceRunning) carry OPTION (MAXDOP 1), keeping SESSION_CONTEXT out of parallel plans
//     (TSQL.md). The single-row statements it shares with tenant requests (get, lock, the
//     run updates by RunId, syncHead's seeks) carry none: a plan of a few key seeks is never
//     parallel.
//
// Lock order (DESIGN.md section 4, with the subject lock this file adds), for every
// transaction that takes more than one of these:
//   1. the tenant row (dbo.Tenants, U): claims only, first;
//   2. the attempt row (U): fenced writes and the reaper;
//   3. the attempt's own run (U), reached through the attempt (the fence); or the run a
//      continue continues (U);
//   4. the subject lock (lockSubject, an exclusive application lock per tenant and
//      subject) of every transaction that changes a subject's queue: inserts a run, leases,
//      requeues or ends one;
//   5. other runs of that subject (X): the run a claim leases or a cancel ends, and the
//      runs whose head marker changes; then what the hooks touch (a claim's new attempt,
//      the attempt's decisions and calls, the delegation rows the run's status follows,
//      and the short reads of its parent run's attempts, delegations and child runs that
//      find them);
//   6. last, the tenant's counter (dbo.TenantLeases, X), then the project's
//      (dbo.ProjectLeases, X), held to commit.
// The counters are last because they are the one pair of rows every claim and unlease of
// a tenant takes: a transaction holding them must wait for nothing else. Before, they came
// before the hooks, and without RCSI a claim (or unlease) of a delegated child's
// continuation, holding the counters, waited on the S lock of the hook's read of its
// parent run's attempts (delegatedSiblings) while the parent's own complete or release,
// holding that attempt X, waited for the counters: a deadlock (1205, retried).
// The one departure is the fence's run (3) locked before the subject lock (4), which is
// safe because only a run's own fenced writers and the reaper (both through the attempt,
// 2) lock a leased run, and a subject-lock holder never waits for a leased run: the marker
// changes touch queued runs only, and the head computation reads the leased run through
// UX_Runs_LeasedSubject, whose key no fence holds. Why every queue change takes the
// subject lock: see syncHead.

// mssqlRunTable is the table variable that OUTPUT ... INTO fills with a changed run (the
// rowversion as binary(8)), and mssqlRunOutput the OUTPUT list that fills it.
const mssqlRunTable = `DECLARE @t TABLE (RunId uniqueidentifier, TenantId nvarchar(64), ProjectId nvarchar(64),
    EnvironmentId nvarchar(64), Subject nvarchar(256), Kind nvarchar(64), AgentId nvarchar(128), StepId uniqueidentifier,
    SnapshotId uniqueidentifier, Input nvarchar(max), Band int, State int, Epoch bigint, HolderId nvarchar(128),
    LeaseSeconds int, LeasedUntil datetimeoffset(3), Attempt int, MaxAttempts int, MaxCorrections int,
    QueuedAt datetimeoffset(3), DueAt datetimeoffset(3), DeadlineAt datetimeoffset(3), EndedAt datetimeoffset(3),
    Outcome nvarchar(16), ErrorCode nvarchar(64), ErrorMessage nvarchar(2000), CancelRequestedAt datetimeoffset(3),
    IdempotencyKey nvarchar(256), ParentRunId uniqueidentifier, Depth int, ContinuedFromRunId uniqueidentifier,
    CreatedBy nvarchar(64), Version binary(8), SubjectHead bit);
`

const mssqlRunOutput = `
OUTPUT inserted.RunId, inserted.TenantId, inserted.ProjectId, inserted.EnvironmentId, inserted.Subject,
    inserted.Kind, inserted.AgentId, inserted.StepId, inserted.SnapshotId, inserted.Input, inserted.Band,
    inserted.State, inserted.Epoch, inserted.HolderId, inserted.LeaseSeconds, inserted.LeasedUntil,
    inserted.Attempt, inserted.MaxAttempts, inserted.MaxCorrections, inserted.QueuedAt, inserted.DueAt,
    inserted.DeadlineAt, inserted.EndedAt, inserted.Outcome, inserted.ErrorCode, inserted.ErrorMessage,
    inserted.CancelRequestedAt, inserted.IdempotencyKey, inserted.ParentRunId, inserted.Depth,
    inserted.ContinuedFromRunId, inserted.CreatedBy, inserted.Version, inserted.SubjectHead
INTO @t`

const mssqlRunSelect = `
SELECT ` + runColumns + `, SubjectHead FROM @t;`

// mssqlEligible is what makes a head r claimable besides its band and due time, as on
// SQLite: project active, no cancel pending, and the claim's filters. The subject's order
// is the head marker (the seek's SubjectHead = 1): no sibling probes.
//   - The project probe (PK_Projects seek) carries no hints: under RCSI the committed image
//     at the statement's start (a project paused in flight still looks active, and the
//     claim may lease one more run of it, as it could have a moment earlier); without RCSI
//     a short S lock.
//   - OPENJSON needs compatibility level 130 (Msg 208 below it; `ledger check` reports
//     it). Its [value] is nvarchar(max) and is pinned to BIN2 so the match is exact and
//     case-sensitive as on SQLite; the skip list compares as uniqueidentifier (TRY_CAST: a
//     malformed entry matches nothing), since a uniqueidentifier's text form is upper case
//     here and lower case in Go.
const mssqlEligible = `
        AND r.CancelRequestedAt IS NULL
        AND EXISTS (SELECT 1 FROM dbo.Projects AS pa
            WHERE pa.TenantId = r.TenantId AND pa.ProjectId = r.ProjectId AND pa.Active = 1)
        AND (@p5 = N'[]' OR r.Kind IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p5) AS j))
        AND (@p6 = N'[]' OR r.AgentId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p6) AS j))
        AND (@p7 = N'[]' OR r.ProjectId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p7) AS j))
        AND NOT EXISTS (SELECT 1 FROM OPENJSON(@p8) AS s WHERE TRY_CAST(s.[value] AS uniqueidentifier) = r.RunId)`

// mssqlSeekBand starts one band's seek of IX_Runs_Claim (TenantId, Band, DueAt, RunId WHERE
// SubjectHead = 1; its INCLUDE list covers every column r reads, so there is no lookup):
// the band's TOP (@p4) oldest eligible heads in DueAt, RunId order, which is the index
// order, so no sort. Heads only: at most one row per subject, so a subject's backlog is
// never read.
//
// Hints: READPAST, ROWLOCK, READCOMMITTEDLOCK. The window is read with short S locks,
// skipping heads another transaction holds X-locked (a marker being moved, a head being
// cancelled) instead of waiting for them; READCOMMITTEDLOCK makes this a locking read under
// RCSI, which READPAST requires there. Skipping is safe: a skipped head is offered by a
// later claim. No UPDLOCK: the claim locks its pick through the subject lock and the lease
// UPDATE, which re-checks State = 0 AND SubjectHead = 1.
const mssqlSeekBand = `SELECT TOP (@p4) r.RunId, r.ProjectId, r.DueAt, r.Subject
        FROM dbo.Runs AS r WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE r.TenantId = @p1 AND r.SubjectHead = 1 AND r.Band = `

const mssqlSeekOrder = `
        ORDER BY r.DueAt, r.RunId`

// mssqlPick weighs the window w by project load, fewest leased runs first (a missing
// counter row is 0), then age. ProjectLeases is read without hints: under RCSI the last
// committed counts; without RCSI a short S lock that waits for a claim or an unlease in
// flight on that project (which never waits for this claim: see the lock order above).
// The counts only order the choice.
const mssqlPick = `
SELECT TOP (1) w.RunId, w.Subject
FROM w
LEFT JOIN dbo.ProjectLeases AS pl ON pl.TenantId = @p1 AND pl.ProjectId = w.ProjectId
ORDER BY COALESCE(pl.LeasedCount, 0), w.DueAt, w.RunId;`

// Claim candidates: one statement per effective band (DESIGN.md section 4), each returning
// RunId and Subject of the pick, or no row.
//
// Reading check (all three):
//   - Index: one IX_Runs_Claim range seek per band (at most three per claim, never a scan
//     of a queue: heads only); per window row PK_Projects (Active) and PK_ProjectLeases.
//   - Locks: after the tenant row (claimStart); short S locks on window keys (READPAST
//     skips X-locked heads), on Projects and ProjectLeases rows (without RCSI only). None
//     is held past the statement.
//   - RCSI: the window is a locking read; the project and counter reads are versioned.
//   - 0 rows -> sql.ErrNoRows -> ErrNotFound: the claim goes on to the next band.
//   - Errors: 208 below compatibility level 130 (OPENJSON), unmapped; 1205 -> ErrRetryable.
//
// Band 0 (INTERACTIVE): its due heads.
const mssqlClaimInteractive = `WITH w AS (
    ` + mssqlSeekBand + `0 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

// Band group 1: BATCH heads due by @p2 together with BACKGROUND heads due by @p3 (aged: due
// for at least the band aging). Each band is its own seek of IX_Runs_Claim (the band is a
// key column, so no OR), each TOP (@p4); the window is the TOP (@p4) oldest of both, as on
// SQLite. ORDER BY inside a UNION branch needs the TOP and a derived table around it.
const mssqlClaimBatch = `WITH w AS (
    SELECT TOP (@p4) c.RunId, c.ProjectId, c.DueAt, c.Subject
    FROM (
        SELECT b1.RunId, b1.ProjectId, b1.DueAt, b1.Subject FROM (
        ` + mssqlSeekBand + `1 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
        ) AS b1
        UNION ALL
        SELECT b2.RunId, b2.ProjectId, b2.DueAt, b2.Subject FROM (
        ` + mssqlSeekBand + `2 AND r.DueAt <= @p3` + mssqlEligible + mssqlSeekOrder + `
        ) AS b2
    ) AS c
    ORDER BY c.DueAt, c.RunId
)` + mssqlPick

// Band 2 (BACKGROUND): its due heads.
const mssqlClaimBackground = `WITH w AS (
    ` + mssqlSeekBand + `2 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

// mssqlFenceColumns is the fence's read: the database clock (so the fenced write sends no
// clock statement of its own), then the attempt, then its run, both U-locked until
// commit, in that order. INNER LOOP JOIN is a join hint, and a join hint makes the
// optimiser keep the written join order: the attempt (PK_ExecutionAttempts seek, one row)
// is the outer input, so its row is read and U-locked first, and only then is the run
// sought (PK_Runs) and U-locked for it. With one outer row there is nothing for nested
// loops to prefetch, so no inner row is locked ahead of the outer one.
//
// The clock: SYSUTCDATETIME() is a runtime constant, evaluated once when the statement
// starts, before it asks for its locks (unlike claimStart, which reads the clock in a
// statement after its lock). A fence that waits on the attempt or the run (a concurrent
// write of the same holder, a cancel request, the reaper) therefore judges and writes with
// the time the request arrived, not the time its locks were granted: a write that arrived
// before LeasedUntil is admitted even if its locks came after, and a heartbeat renews from
// the arrival (a lease shorter by the wait). That is safe: no other holder can be admitted
// in between (the reaper needs the same locks, and a take-back it won is seen here as a
// run no longer leased), so it only moves the edge of "not passed" by the wait.
const mssqlFenceColumns = `CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now, ` + fenceAttemptColumns + `,
    r.RunId AS [run.RunId], r.TenantId AS [run.TenantId], r.ProjectId AS [run.ProjectId], r.Subject AS [run.Subject],
    r.State AS [run.State], r.Epoch AS [run.Epoch], r.LeaseSeconds AS [run.LeaseSeconds],
    r.LeasedUntil AS [run.LeasedUntil], r.Attempt AS [run.Attempt], r.MaxAttempts AS [run.MaxAttempts],
    r.DeadlineAt AS [run.DeadlineAt], r.CancelRequestedAt AS [run.CancelRequestedAt]
FROM dbo.ExecutionAttempts AS a WITH (UPDLOCK, ROWLOCK)
INNER LOOP JOIN dbo.Runs AS r WITH (UPDLOCK, ROWLOCK) ON r.RunId = a.RunId`

var mssqlQueries = queries{
	// insert: a new queued run (State 0), answered as stored (OUTPUT INTO @t: Runs has a
	// trigger, Msg 334 otherwise; the INSERT fires none). SubjectHead is 1 when the subject
	// has no queued and no leased run: two seeks (IX_Runs_SubjectQueue, UX_Runs_LeasedSubject,
	// literals State = 0 / State = 1), read under the subject lock the caller holds, so what
	// they see is every change of the subject's queue committed (RCSI: the statement starts
	// after the lock was granted; without RCSI short S locks on keys only lock holders
	// change). Otherwise 0, and the caller runs syncHead. The SELECT ... WHERE NOT EXISTS
	// inserts nothing when the idempotency key has a tombstone (a purged run): no row out,
	// and Enqueue answers with the tombstone. The probe seeks
	// PK_IdempotencyTombstones WITH (READCOMMITTEDLOCK): a locking read under RCSI too, so a
	// tombstone that a purge has written but not committed is waited for and seen. (Purge
	// writes a chain's tombstones before it deletes its runs, in one transaction; a versioned
	// probe could miss the tombstone and then, waiting on the deleted run's key in
	// UX_Runs_Idempotency, insert once the purge commits: the event would run twice.) With a
	// NULL key the probe matches nothing. Writes PK_Runs and every index; the filtered
	// unique ones only when the key / continued-from is not NULL. Locks: X on the new keys
	// (after the subject lock); an uncommitted duplicate in a unique index makes it wait for
	// that transaction, then fail or succeed. FK checks take short S locks on the tenant,
	// project, parent and continued-from rows (locking reads under RCSI too; U locks are
	// compatible). Errors: 2601 on UX_Runs_Idempotency (Enqueue answers the stored run, or
	// idempotency_key_reused) or UX_Runs_ContinuedFrom (Continue answers the continuation) ->
	// ConflictError, the transaction stays usable (XACT_ABORT OFF on the session); 547 FK
	// (unknown project) -> ErrBadReference -> unknown_project; 547 CHECK -> ErrRefused;
	// 33504 -> ErrRefused.
	insert: mssqlRunTable + `INSERT INTO dbo.Runs (RunId, TenantId, ProjectId, EnvironmentId, Subject, Kind, AgentId, StepId,
    SnapshotId, Input, Band, State, Epoch, Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, DeadlineAt,
    IdempotencyKey, ParentRunId, Depth, ContinuedFromRunId, CreatedBy, RequestHash, SubjectHead)` + mssqlRunOutput + `
SELECT @p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, 0, @p12, @p13, @p14, @p15, @p16, @p17, @p18, @p19,
    @p20, @p21, @p22, @p23, @p24,
    CASE WHEN NOT EXISTS (SELECT 1 FROM dbo.Runs AS q WHERE q.TenantId = @p2 AND q.Subject = @p5 AND q.State = 0)
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS l WHERE l.TenantId = @p2 AND l.Subject = @p5 AND l.State = 1)
        THEN 1 ELSE 0 END
WHERE NOT EXISTS (SELECT 1 FROM dbo.IdempotencyTombstones AS ts WITH (READCOMMITTEDLOCK)
    WHERE ts.TenantId = @p2 AND ts.IdempotencyKey = @p19);` + mssqlRunSelect,

	// get: PK_Runs seek, TenantId residual (and RLS). No hints: under RCSI the last
	// committed row (or this transaction's own change); without RCSI a short S lock. 0 rows
	// -> ErrNotFound (missing or another tenant's).
	get: `SELECT ` + runColumns + ` FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// lock: get, holding a U lock on the PK_Runs key until commit: the only run lock of
	// cancel (after the subject lock when the run is queued), continue (the old run) and the
	// deadline end. UPDLOCK makes it a locking read under RCSI too: it waits for a writer in
	// flight and returns the latest committed row. U locks do not block plain readers.
	// 0 rows -> ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	lock: `SELECT ` + runColumns + ` FROM dbo.Runs WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1 AND RunId = @p2;`,

	// byIdempotency: UX_Runs_Idempotency seek (TenantId, IdempotencyKey), then a PK_Runs
	// lookup. "IdempotencyKey IS NOT NULL" repeats the index's filter so the filtered index
	// matches whatever the optimizer infers from "= @p2". Read after the insert's 2601, so
	// the duplicate's transaction has committed (the insert waited for it): under RCSI the
	// statement's image has the row. No hints. 0 rows -> ErrNotFound.
	byIdempotency: `SELECT ` + runColumns + `, RequestHash FROM dbo.Runs
WHERE TenantId = @p1 AND IdempotencyKey = @p2 AND IdempotencyKey IS NOT NULL;`,

	// continuation: UX_Runs_ContinuedFrom seek, filter repeated as above, PK_Runs lookup,
	// TenantId residual. Read after the insert's 2601 (the winner committed). 0 rows ->
	// ErrNotFound.
	continuation: `SELECT ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND ContinuedFromRunId = @p2 AND ContinuedFromRunId IS NOT NULL;`,

	// tombstone: PK seek of IdempotencyTombstones, read when the insert found one. No locks
	// kept; 0 rows -> ErrNotFound (not expected: the insert just saw it).
	tombstone: `SELECT RunId, PurgedAt FROM dbo.IdempotencyTombstones WHERE TenantId = @p1 AND IdempotencyKey = @p2;`,

	// lockSubject: the subject lock, an exclusive application lock owned by the transaction
	// (released at commit or rollback), on a resource named by the service from a hash of
	// tenant and subject (nvarchar(255) at most; a resource name compares byte for byte).
	// sp_getapplock needs only the public role. It waits as long as @@LOCK_TIMEOUT (the
	// session's; -1 by default) and takes part in deadlock detection; a deadlock victim is
	// told by the result code (-3) and its transaction is NOT rolled back for it, so the
	// code answers the result and the service turns any negative result into ErrRetryable
	// (the whole transaction runs again). Always one row.
	lockSubject: `DECLARE @result int;
EXEC @result = sys.sp_getapplock @Resource = @p1, @LockMode = N'Exclusive', @LockOwner = N'Transaction';
SELECT @result;`,

	// syncHead: recomputes a subject's head marker after a change of its queue, under the
	// subject lock (lockSubject), inside the transaction that made the change.
	//
	// Why the subject lock (the concurrency argument). The marker's definition reads the
	// whole subject: its leased run, its oldest queued run. Two transactions that change one
	// subject's queue and then each compute the marker from what they can see would each miss
	// the other's uncommitted change: under RCSI an enqueue that reads the subject's leased
	// run as still leased, while a concurrent complete of that run promotes "the oldest
	// queued run" without seeing the new one, leaves the subject with no head forever; and
	// without RCSI the same pair deadlocks or, worse, computes from rows read before a lock
	// wait (SQL Server does not re-evaluate a statement after it waits). So every
	// transaction that inserts a run, leases, requeues or ends one takes the subject's
	// exclusive lock first (lock order above) and holds it to commit: the changes of one
	// subject's queue are serial, each one's marker computation runs in a statement that
	// starts after the previous holder committed (RCSI: its image has that commit; without
	// RCSI: nothing of the queue is locked by anyone else), and no other transaction can
	// change the queue between this computation and this transaction's commit.
	// Transactions that change a run without changing the queue (heartbeat, a cancel
	// request on a leased run, a fence that refuses) take no subject lock and touch nothing
	// the computation reads.
	//
	// Reading check:
	//   - @head: IX_Runs_SubjectQueue seek (TenantId, Subject, State = 0 literal), first row
	//     in (QueuedAt, RunId) order, and the NOT EXISTS probe of UX_Runs_LeasedSubject
	//     (State = 1 literal): two seeks. No hints (see above); under RCSI versioned, without
	//     RCSI short S locks on keys no one else holds X on (only subject-lock holders change
	//     these keys; a heartbeat or cancel request changes no key of these indexes).
	//   - UPDATE: the IN list is at most two RunIds (the current head from UX_Runs_SubjectHead,
	//     SubjectHead = 1 literal, and @head), PK_Runs seeks; X on the rows whose marker changes
	//     (queued runs of the subject: a fence that holds U on one of them, for a lost attempt,
	//     is waited for; it never waits for the subject lock). TR_Runs_Guard allows 0 -> 0
	//     when only the marker changes. Usually nothing changes: 0 rows, nothing locked.
	//   - Errors: 2601 on UX_Runs_SubjectHead cannot happen (one statement clears the old head
	//     and sets the new one, and the lock keeps others out); if it did, it is a bug and a
	//     500. 547 CHECK (CK_Runs_HeadIsQueued) cannot happen (@head is queued). 1205 ->
	//     ErrRetryable.
	syncHead: `DECLARE @head uniqueidentifier = (
    SELECT TOP (1) q.RunId FROM dbo.Runs AS q
    WHERE q.TenantId = @p1 AND q.Subject = @p2 AND q.State = 0
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS l WHERE l.TenantId = @p1 AND l.Subject = @p2 AND l.State = 1)
    ORDER BY q.QueuedAt, q.RunId);
UPDATE r SET SubjectHead = CASE WHEN r.RunId = @head THEN 1 ELSE 0 END
FROM dbo.Runs AS r
WHERE r.RunId IN (
        SELECT o.RunId FROM dbo.Runs AS o WHERE o.TenantId = @p1 AND o.Subject = @p2 AND o.SubjectHead = 1
        UNION ALL
        SELECT @head WHERE @head IS NOT NULL)
    AND ((r.SubjectHead = 1 AND (@head IS NULL OR r.RunId <> @head)) OR (r.SubjectHead = 0 AND r.RunId = @head));`,

	// claimStart: the first statements of a claim in one round trip: sqldb puts the tenant
	// scope in front of it (sqldb.TenantScopeInFirstRoundTrip: the session-context
	// statement, its parameters numbered after this one's), then:
	//   1. The budget hold: PK_Tenants seek WITH (UPDLOCK, ROWLOCK): a U lock on the tenant's
	//      key held until commit, whatever the isolation level, so every claim of the tenant
	//      queues here until the one before commits or rolls back. A locking read under RCSI
	//      too. U does not block readers (the S locks of foreign-key checks of inserts that
	//      name the tenant): only claims and setMaxLeased wait.
	//   2. The leased count, read in a second statement, so it starts after the U lock was
	//      granted: under RCSI its image has every claim of the tenant committed before this
	//      one (each held the U lock until commit), so no lease is missed; an unlease in
	//      flight is still counted (errs towards holding the budget). Without RCSI a short S
	//      lock, which waits for such an unlease (it never waits for the tenant row). PK seek
	//      of TenantLeases; no row counts 0.
	//   3. The clock, read after the lock, so a claim that waited leases from when it runs.
	// 0 rows (no such tenant) -> ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	claimStart: `DECLARE @max int;
SELECT @max = MaxLeasedRuns FROM dbo.Tenants WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1;
SELECT CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now, @max AS MaxLeasedRuns,
    COALESCE((SELECT l.LeasedCount FROM dbo.TenantLeases AS l WHERE l.TenantId = @p1), 0) AS LeasedCount
WHERE @max IS NOT NULL;`,

	// Three statements, tried in band order (a T-SQL COALESCE of subqueries would run a
	// subquery twice: it expands to CASE WHEN (q) IS NOT NULL THEN (q)).
	claimCandidates: []string{mssqlClaimInteractive, mssqlClaimBatch, mssqlClaimBackground},

	// lease: PK_Runs seek of the pick, after the subject lock. "State = 0 AND SubjectHead = 1"
	// re-checks what the pick saw: a head that a cancel or the deadline reaper ended (or
	// whose marker moved) while this claim waited for the subject lock is not leased (no
	// row: the claim skips it and seeks again). X on the run until commit; the row leaves
	// IX_Runs_Claim, IX_Runs_SubjectQueue and UX_Runs_SubjectHead and enters
	// UX_Runs_LeasedSubject and IX_Runs_LeaseExpiry. SubjectHead = 0: the subject now has a
	// leased run, so it has no head. Epoch + 1 is the only Epoch change TR_Runs_Guard allows.
	// RCSI: an UPDATE finds its row with a U lock on the latest committed version. Errors:
	// 2601 on UX_Runs_LeasedSubject (another run of the subject leased: cannot happen while
	// the marker holds, and is still answered as "try the next candidate") -> ConflictError,
	// the statement is rolled back and the transaction stays usable; 50002 -> ErrRefused
	// (and, raised in a trigger, the end of the transaction).
	lease: mssqlRunTable + `UPDATE dbo.Runs SET State = 1, Epoch = Epoch + 1, HolderId = @p3, LeaseSeconds = @p4, LeasedUntil = @p5,
    SubjectHead = 0` + mssqlRunOutput + `
WHERE TenantId = @p1 AND RunId = @p2 AND State = 0 AND SubjectHead = 1;` + mssqlRunSelect,

	// tenantLeased, projectLeased: a claim's +1 on the counters (lock order step 6, the
	// claim's last statements). PK
	// seek, X on the row until commit; the row is inserted when missing. Only a claim can
	// find it missing (an unlease follows a claim that made it), and claims of a tenant are
	// serialised by its U lock (claimStart), so no two transactions insert one key; a 2627
	// would be a bug (a 500). Errors: 1205 -> ErrRetryable; 547 CHECK (LeasedCount >= 0) on
	// an unlease below zero, a bug -> ErrRefused.
	tenantLeased: `UPDATE dbo.TenantLeases SET LeasedCount = LeasedCount + 1 WHERE TenantId = @p1;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.TenantLeases (TenantId, LeasedCount) VALUES (@p1, 1);`,
	projectLeased: `UPDATE dbo.ProjectLeases SET LeasedCount = LeasedCount + 1 WHERE TenantId = @p1 AND ProjectId = @p2;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.ProjectLeases (TenantId, ProjectId, LeasedCount) VALUES (@p1, @p2, 1);`,
	// tenantUnleased, projectUnleased: as above, -1 on a row a claim made (0 rows is a bug
	// the agreement check would show, not an error here).
	tenantUnleased:  `UPDATE dbo.TenantLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = @p1;`,
	projectUnleased: `UPDATE dbo.ProjectLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = @p1 AND ProjectId = @p2;`,

	// fence: the one read of every fenced write (lock order steps 2 and 3, see
	// mssqlFenceColumns for the order). PK_ExecutionAttempts seek (one row), then PK_Runs
	// seek; TenantId residuals on both (and RLS). UPDLOCK makes both reads locking under RCSI
	// too: each waits for a writer in flight and returns the latest committed row, and both
	// U locks are held until commit, so the checks made on them hold for the rest of the
	// transaction. U does not block plain readers. 0 rows -> ErrNotFound (no such attempt
	// for this tenant). Errors: 1205/1222 -> ErrRetryable.
	fence: `SELECT ` + mssqlFenceColumns + `
WHERE a.TenantId = @p1 AND a.AttemptId = @p2 AND r.TenantId = @p1;`,

	// fenceRunning: the reaper's form of the fence, across tenants (MaintenanceScope):
	// IX_Attempts_Run_Step seek on RunId, FencingToken and State residuals (a run's attempts,
	// at most its MaxAttempts rows read, each U-locked while it is read and kept only when it
	// qualifies), then the run as in fence. 0 rows -> ErrNotFound (completed or taken back
	// meanwhile: the reaper rolls back). OPTION (MAXDOP 1): a maintenance-scope statement
	// (SESSION_CONTEXT in parallel plans, TSQL.md).
	fenceRunning: `SELECT ` + mssqlFenceColumns + `
WHERE a.TenantId = @p1 AND a.RunId = @p2 AND a.FencingToken = @p3 AND a.State = 0 AND r.TenantId = @p1
OPTION (MAXDOP 1);`,

	// heartbeat: PK_Runs seek; run as the fence's write, under the attempt's and the run's
	// U locks, so exactly one row (exec1). X on the run and on its IX_Runs_LeaseExpiry keys
	// (no key of the marker's indexes changes: no subject lock needed). 1 -> 1 with the same
	// Epoch passes TR_Runs_Guard. One statement, so RowsAffected is its own count (the
	// trigger runs with NOCOUNT). 0 rows -> exec1's error. Errors: 1205 -> ErrRetryable.
	heartbeat: `UPDATE dbo.Runs SET LeasedUntil = @p3, LeaseSeconds = @p4 WHERE RunId = @p1 AND Epoch = @p2 AND State = 1;`,

	// requeue: PK_Runs seek, under the fence's U lock (or the reaper's) and the subject lock.
	// "(@p5 IS NULL OR LeasedUntil < @p5)" is the reaper's conditional take-back (NULL: a
	// holder's release, unconditional). The row leaves UX_Runs_LeasedSubject and
	// IX_Runs_LeaseExpiry and re-enters IX_Runs_SubjectQueue with its old QueuedAt; syncHead
	// then marks the subject's head. 0 rows -> ErrNotFound (the reaper lost the race: rolls
	// back). Errors: 50002 -> ErrRefused; 1205 -> ErrRetryable.
	requeue: mssqlRunTable + `UPDATE dbo.Runs SET State = 0, DueAt = @p3, Attempt = @p4, LeasedUntil = NULL` + mssqlRunOutput + `
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p5 IS NULL OR LeasedUntil < @p5);` + mssqlRunSelect,

	// endLeased: as requeue, ending the run (1 -> 2). CK_Runs_Outcome checks @p3 and
	// CK_Runs_EndedHasOutcome the pair (547 CHECK -> ErrRefused). 0 rows -> ErrNotFound.
	endLeased: mssqlRunTable + `UPDATE dbo.Runs SET State = 2, Outcome = @p3, EndedAt = @p4, Attempt = @p5, LeasedUntil = NULL` + mssqlRunOutput + `
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p6 IS NULL OR LeasedUntil < @p6);` + mssqlRunSelect,

	// endQueued: PK_Runs seek, after the subject lock and the run's U lock (lock): cancel and
	// the deadline end. SubjectHead = 0 (CK_Runs_HeadIsQueued); syncHead then promotes the
	// next head if this was the head. The row leaves IX_Runs_Claim, IX_Runs_SubjectQueue,
	// UX_Runs_SubjectHead and IX_Runs_QueuedDeadline. 0 -> 2 with the same Epoch passes the
	// trigger. 0 rows -> ErrNotFound. Errors: 547 CHECK -> ErrRefused; 1205 -> ErrRetryable.
	endQueued: mssqlRunTable + `UPDATE dbo.Runs SET State = 2, Outcome = @p2, EndedAt = @p3, SubjectHead = 0` + mssqlRunOutput + `
WHERE RunId = @p1 AND State = 0;` + mssqlRunSelect,

	// requestCancel: PK_Runs seek, after lock (U) on the run; no queue change, so no subject
	// lock. 1 -> 1, same Epoch. 0 rows -> ErrNotFound. Errors: 1205 -> ErrRetryable.
	requestCancel: mssqlRunTable + `UPDATE dbo.Runs SET CancelRequestedAt = @p2` + mssqlRunOutput + `
WHERE RunId = @p1 AND State = 1 AND CancelRequestedAt IS NULL;` + mssqlRunSelect,

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
	// locks, none held. OPTION (MAXDOP 1): maintenance scope (TSQL.md). 0 rows -> an empty
	// batch.
	expiredLeases: `SELECT TOP (@p2) RunId, TenantId, Epoch FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 1 AND LeasedUntil < @p1
ORDER BY LeasedUntil
OPTION (MAXDOP 1);`,

	// overdueQueued: across tenants. Index: IX_Runs_QueuedDeadline (DeadlineAt WHERE State = 0
	// AND DeadlineAt IS NOT NULL; both literals repeated), PK_Runs lookups for TenantId.
	// READPAST as expiredLeases: a run being claimed or cancelled is skipped; endOverdue
	// re-checks under its own locks. OPTION (MAXDOP 1): maintenance scope. 0 rows -> an
	// empty batch.
	overdueQueued: `SELECT TOP (@p2) RunId, TenantId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 0 AND DeadlineAt IS NOT NULL AND DeadlineAt < @p1
ORDER BY DeadlineAt
OPTION (MAXDOP 1);`,
}
