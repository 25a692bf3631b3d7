package runs

import (
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the run-lease core. The rules every statement shares
// (arguments, READ COMMITTED with or without RCSI, row-level security, filtered-index
// literals, serial plans, bounds, the error table) are in docs/tsql-notes.md; a statement's
// comment says what is particular to it. dbo.Runs has a trigger (TR_Runs_Guard), so an
// UPDATE that answers with the row fills @t (OUTPUT ... INTO) and selects from it.
//
// Lock order, for every transaction that takes more than one of these:
//   1. the tenant row (dbo.Tenants, U): claims only;
//   2. the attempt row (U): fenced writes and the reaper;
//   3. the attempt's own run (U), reached through the attempt; or the run a continue continues;
//   4. the subject lock (lockSubject) of every transaction that changes a subject's queue;
//   5. other runs of that subject (X), then what the hooks touch;
//   6. last, the tenant's counter (dbo.TenantLeases), then the project's (dbo.ProjectLeases).
// The counters are last because every claim and unlease of a tenant takes them: their
// holder must wait for nothing else. The fence's run (3) before the subject lock (4) is
// safe: only a run's own fenced writers and the reaper lock a leased run, and a subject-lock
// holder reads the leased run through UX_Runs_LeasedSubject, whose key no fence holds.

var mssqlRunSelect = `
SELECT ` + runColumns + `, SubjectHead FROM @t;`

// mssqlEligible: what makes a head claimable besides band and due time, as on SQLite. The
// project probe is a PK_Projects seek without hints (under RCSI a project paused in flight
// still looks active: one more lease, as a moment earlier), and for a project with a daily
// cost budget a PK_ProjectDailyCosts seek of the day (CAST of the UTC datetimeoffset). OPENJSON needs compatibility
// level 130; [value] is pinned to BIN2 so matches are exact; the skip list compares as
// uniqueidentifier (TRY_CAST: a malformed entry matches nothing).
const mssqlEligible = `
        AND r.CancelRequestedAt IS NULL
        AND EXISTS (SELECT 1 FROM dbo.Projects AS pa
            WHERE pa.TenantId = r.TenantId AND pa.ProjectId = r.ProjectId AND pa.Active = 1
            AND (pa.DailyCostBudgetMicros IS NULL OR NOT EXISTS (SELECT 1 FROM dbo.ProjectDailyCosts AS pc
                WHERE pc.TenantId = pa.TenantId AND pc.Day = CAST(@p2 AS date) AND pc.ProjectId = pa.ProjectId
                AND pc.CostMicros >= pa.DailyCostBudgetMicros)))
        AND (@p5 = N'[]' OR r.Kind IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p5) AS j))
        AND (@p6 = N'[]' OR r.AgentId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p6) AS j))
        AND (@p7 = N'[]' OR r.ProjectId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p7) AS j))
        AND (@p8 = N'[]' OR NOT EXISTS (SELECT 1 FROM OPENJSON(@p8) AS s WHERE TRY_CAST(s.[value] AS uniqueidentifier) = r.RunId))`

// mssqlSeekBand: one band's TOP (@p4) oldest eligible heads, a range seek of IX_Runs_Claim
// in its key order (its INCLUDE list covers r: no lookup, no sort). READPAST skips heads
// another transaction holds X (a marker moving, a cancel): a later claim offers them.
// ROWLOCK keeps READPAST skipping rows, not pages; READCOMMITTEDLOCK makes this a locking
// read under RCSI, which READPAST requires (docs/tsql-notes.md has the evidence that the
// hint pair is accepted). No UPDLOCK: the lease UPDATE re-checks its pick.
const mssqlSeekBand = `SELECT TOP (@p4) r.RunId, r.ProjectId, r.DueAt, r.Subject
        FROM dbo.Runs AS r WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
        WHERE r.TenantId = @p1 AND r.SubjectHead = 1 AND r.Band = `

const mssqlSeekOrder = `
        ORDER BY r.DueAt, r.RunId`

// mssqlPick: the window's pick, fewest leased runs of its project first, then age.
// ProjectLeases is read without hints: the counts only order the choice.
const mssqlPick = `
SELECT TOP (1) w.RunId, w.Subject
FROM w
LEFT JOIN dbo.ProjectLeases AS pl ON pl.TenantId = @p1 AND pl.ProjectId = w.ProjectId
ORDER BY COALESCE(pl.LeasedCount, 0), w.DueAt, w.RunId
OPTION (MAXDOP 1);`

// Claim candidates, one statement per band group (DESIGN.md section 4), each the pick's
// RunId and Subject or no row (ErrNotFound: the next group). At most three IX_Runs_Claim
// seeks; locks: short S on window keys, none held. Band 0 (INTERACTIVE):
const mssqlClaimInteractive = `WITH w AS (
    ` + mssqlSeekBand + `0 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

// Band group 1: BATCH heads due by @p2 and BACKGROUND heads due by @p3, each its own seek
// (the band is a key column, so no OR), the window the TOP (@p4) oldest of both.
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

// Band 2 (BACKGROUND):
const mssqlClaimBackground = `WITH w AS (
    ` + mssqlSeekBand + `2 AND r.DueAt <= @p2` + mssqlEligible + mssqlSeekOrder + `
)` + mssqlPick

// mssqlFenceColumns is the fence's read: the clock, then the attempt (attempts.FenceColumns:
// what the fence judges, what the writes under it use, and what EndFenced does not read
// again), then its run, both
// U-locked to commit in that order (INNER LOOP JOIN keeps the written order; one outer row,
// so nothing is prefetched). SYSUTCDATETIME() is evaluated when the statement starts, before
// its locks: a write that waited is judged at its arrival, which no other holder can
// overtake (the reaper needs the same locks).
var mssqlFenceColumns = `CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now, ` + attempts.FenceColumns + `,
    r.RunId AS [run.RunId], r.TenantId AS [run.TenantId], r.ProjectId AS [run.ProjectId], r.Subject AS [run.Subject],
    r.State AS [run.State], r.Epoch AS [run.Epoch], r.LeaseSeconds AS [run.LeaseSeconds],
    r.LeasedUntil AS [run.LeasedUntil], r.Attempt AS [run.Attempt], r.MaxAttempts AS [run.MaxAttempts],
    r.DeadlineAt AS [run.DeadlineAt], r.CancelRequestedAt AS [run.CancelRequestedAt]
FROM dbo.ExecutionAttempts AS a WITH (UPDLOCK, ROWLOCK)
INNER LOOP JOIN dbo.Runs AS r WITH (UPDLOCK, ROWLOCK) ON r.RunId = a.RunId`

var mssqlQueries = queries{
	// insert: State 0, SubjectHead 1 when the subject has no queued and no leased run (two
	// seeks, read under the caller's subject lock); otherwise the caller runs syncHead. Nothing
	// is inserted when the idempotency key has a tombstone: the probe is a locking read
	// (READCOMMITTEDLOCK), so a purge's uncommitted tombstone is waited for, not missed. Errors:
	// 2601 on UX_Runs_Idempotency or UX_Runs_ContinuedFrom (the caller answers the stored run);
	// 547 FK (unknown project) -> unknown_project.
	insert: `DECLARE @h TABLE (Version binary(8), SubjectHead bit);
INSERT INTO dbo.Runs (` + runInsertColumns + `,
    State, SubjectHead)
OUTPUT inserted.Version, inserted.SubjectHead INTO @h
SELECT ` + insertValues("@p") + `, 0,
    CASE WHEN NOT EXISTS (SELECT 1 FROM dbo.Runs AS q WHERE q.TenantId = @p2 AND q.Subject = @p5 AND q.State = 0)
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS l WHERE l.TenantId = @p2 AND l.Subject = @p5 AND l.State = 1)
        THEN 1 ELSE 0 END
WHERE NOT EXISTS (SELECT 1 FROM dbo.IdempotencyTombstones AS ts WITH (READCOMMITTEDLOCK)
    WHERE ts.TenantId = @p2 AND ts.IdempotencyKey = ` + insertArg("@p", "IdempotencyKey") + `);
SELECT Version, SubjectHead FROM @h;`,

	// get: PK_Runs seek. 0 rows: missing or another tenant's.
	get: `SELECT ` + runColumns + ` FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// lock: get with a U lock held to commit (cancel, continue, the deadline end).
	lock: `SELECT ` + runColumns + ` FROM dbo.Runs WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1 AND RunId = @p2;`,

	// byIdempotency, continuation: filtered unique seeks (the filter repeated), read after the
	// insert's 2601, when the duplicate's writer has committed.
	byIdempotency: `SELECT ` + runColumns + `, RequestHash FROM dbo.Runs
WHERE TenantId = @p1 AND IdempotencyKey = @p2 AND IdempotencyKey IS NOT NULL;`,

	// chain: the run page's continuation chain in one read. back: a PK_Runs seek per hop;
	// fwd: an IX_Runs_ContinuedFromRunId seek per hop (unique by UX_Runs_ContinuedFrom);
	// each at most @p3 hops (a chain has no cycle: it points to older runs), then a PK_Runs
	// lookup per run and a sort of at most 2 x @p3 + 1 rows. 0 rows: not the tenant's run.
	chain: `WITH back AS (
    SELECT RunId AS ChainRunId, ContinuedFromRunId AS PrevRunId, 0 AS Pos FROM dbo.Runs WHERE RunId = @p2 AND TenantId = @p1
    UNION ALL
    SELECT r.RunId, r.ContinuedFromRunId, b.Pos - 1 FROM back b JOIN dbo.Runs r ON r.RunId = b.PrevRunId
    WHERE b.Pos > -@p3 AND r.TenantId = @p1
), fwd AS (
    SELECT RunId AS ChainRunId, 0 AS Pos FROM dbo.Runs WHERE RunId = @p2 AND TenantId = @p1
    UNION ALL
    SELECT r.RunId, f.Pos + 1 FROM fwd f JOIN dbo.Runs r ON r.ContinuedFromRunId = f.ChainRunId
    WHERE f.Pos < @p3 AND r.TenantId = @p1
)
SELECT ` + runColumns + `, c.Pos AS Pos
FROM (SELECT ChainRunId, Pos FROM back UNION SELECT ChainRunId, Pos FROM fwd) AS c JOIN dbo.Runs ON Runs.RunId = c.ChainRunId
ORDER BY c.Pos
OPTION (MAXRECURSION 100, MAXDOP 1);`,

	continuation: `SELECT ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND ContinuedFromRunId = @p2 AND ContinuedFromRunId IS NOT NULL;`,

	// forkPoint: PK_Checkpoints seek, then the attempt's PK seek to check its run. 0 rows: not a
	// checkpoint of that run (or not the tenant's).
	forkPoint: `SELECT k.CheckpointId FROM dbo.Checkpoints AS k
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = k.AttemptId
WHERE k.CheckpointId = @p3 AND k.TenantId = @p1 AND a.RunId = @p2 AND a.TenantId = @p1;`,

	// tombstone: PK seek, read when the insert found one.
	tombstone: `SELECT RunId, PurgedAt FROM dbo.IdempotencyTombstones WHERE TenantId = @p1 AND IdempotencyKey = @p2;`,

	// lockSubject: an exclusive application lock owned by the transaction, on a hashed name.
	// It takes part in deadlock detection; a victim is told by the result (-3) without a
	// rollback, so the service turns any negative result into ErrRetryable. Always one row.
	lockSubject: `DECLARE @result int;
EXEC @result = sys.sp_getapplock @Resource = @p1, @LockMode = N'Exclusive', @LockOwner = N'Transaction';
SELECT @result;`,

	// syncHead: after a change of the subject's queue, under the subject lock, which makes the
	// changes of one subject's queue serial (without it, two transactions computing the marker
	// from what they can see would each miss the other's change). @head is the oldest queued run
	// (IX_Runs_SubjectQueue) when no run is leased (UX_Runs_LeasedSubject). Then two statements:
	// clear the old head (UX_Runs_SubjectHead seek), set the new one (PK seek): the unique
	// filtered index never holds two heads, whatever the plan. Usually both change 0 rows.
	syncHead: `DECLARE @head uniqueidentifier = (
    SELECT TOP (1) q.RunId FROM dbo.Runs AS q
    WHERE q.TenantId = @p1 AND q.Subject = @p2 AND q.State = 0
        AND NOT EXISTS (SELECT 1 FROM dbo.Runs AS l WHERE l.TenantId = @p1 AND l.Subject = @p2 AND l.State = 1)
    ORDER BY q.QueuedAt, q.RunId);
UPDATE dbo.Runs SET SubjectHead = 0
WHERE TenantId = @p1 AND Subject = @p2 AND SubjectHead = 1 AND (@head IS NULL OR RunId <> @head);
UPDATE dbo.Runs SET SubjectHead = 1
WHERE TenantId = @p1 AND RunId = @head AND SubjectHead = 0;`,

	// claimStart: after the scope (TenantScopeInFirstRoundTrip puts it in front): the tenant
	// row U-locked to commit (every claim of the tenant queues here), then the leased count and
	// the clock in a second statement that starts after the lock, so under RCSI it sees every
	// earlier claim committed. 0 rows: no such tenant.
	claimStart: `DECLARE @max int;
SELECT @max = MaxLeasedRuns FROM dbo.Tenants WITH (UPDLOCK, ROWLOCK) WHERE TenantId = @p1;
SELECT CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now, @max AS MaxLeasedRuns,
    COALESCE((SELECT l.LeasedCount FROM dbo.TenantLeases AS l WHERE l.TenantId = @p1), 0) AS LeasedCount
WHERE @max IS NOT NULL;`,

	// Three statements tried in band order (a COALESCE of subqueries would run one twice).
	claimCandidates: []string{mssqlClaimInteractive, mssqlClaimBatch, mssqlClaimBackground},

	// lease: PK seek after the subject lock; "State = 0 AND SubjectHead = 1" re-checks the pick
	// (0 rows: ended or moved while waiting; the claim seeks again). 2601 on
	// UX_Runs_LeasedSubject is answered as "try the next candidate".
	lease: mssqlRunTable + `UPDATE dbo.Runs SET State = 1, Epoch = Epoch + 1, HolderId = @p3, LeaseSeconds = @p4, LeasedUntil = @p5,
    SubjectHead = 0` + mssqlRunOutput + `
WHERE TenantId = @p1 AND RunId = @p2 AND State = 0 AND SubjectHead = 1;` + mssqlRunSelect,

	// tenantLeased, projectLeased: +1, inserting a missing row. Only a claim can find it missing,
	// and a tenant's claims are serial (claimStart), so no two insert one key.
	tenantLeased: `UPDATE dbo.TenantLeases SET LeasedCount = LeasedCount + 1 WHERE TenantId = @p1;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.TenantLeases (TenantId, LeasedCount) VALUES (@p1, 1);`,
	projectLeased: `UPDATE dbo.ProjectLeases SET LeasedCount = LeasedCount + 1 WHERE TenantId = @p1 AND ProjectId = @p2;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.ProjectLeases (TenantId, ProjectId, LeasedCount) VALUES (@p1, @p2, 1);`,
	// tenantUnleased, projectUnleased: -1 on a row a claim made.
	tenantUnleased:  `UPDATE dbo.TenantLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = @p1;`,
	projectUnleased: `UPDATE dbo.ProjectLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = @p1 AND ProjectId = @p2;`,

	// fence: see mssqlFenceColumns. 0 rows: no such attempt for this tenant.
	fence: `SELECT ` + mssqlFenceColumns + `
WHERE a.TenantId = @p1 AND a.AttemptId = @p2 AND r.TenantId = @p1;`,

	// fenceWhole: the fence itself. SQL Server's rowversion cannot be read before the write
	// that takes it, so its end answers what the fence did not read (attempts.EndWhole falls
	// back to EndFenced when the fence read no stamp).
	fenceWhole: `SELECT ` + mssqlFenceColumns + `
WHERE a.TenantId = @p1 AND a.AttemptId = @p2 AND r.TenantId = @p1;`,

	// fenceRunning: the reaper's fence across tenants: IX_Attempts_Run_Step seek on RunId (at
	// most MaxAttempts rows), then the run. 0 rows: completed or taken back meanwhile.
	fenceRunning: `SELECT ` + mssqlFenceColumns + `
WHERE a.TenantId = @p1 AND a.RunId = @p2 AND a.FencingToken = @p3 AND a.State = 0 AND r.TenantId = @p1
OPTION (MAXDOP 1);`,

	// heartbeat: PK seek under the fence's locks: exactly one row; no marker changes.
	heartbeat: `UPDATE dbo.Runs SET LeasedUntil = @p3, LeaseSeconds = @p4 WHERE RunId = @p1 AND Epoch = @p2 AND State = 1;`,

	// requeue, endLeased: PK seek under the fence's (or the reaper's) locks and the subject
	// lock; "(@pN IS NULL OR LeasedUntil < @pN)" is the reaper's conditional take-back. 0 rows:
	// the reaper lost the race. Errors: 547 CHECK (outcome) and 50002 (the guard) -> ErrRefused.
	// SubjectQueued says whether the subject has a queued run, so that syncHead runs only
	// when there is a head to mark: requeue's run is itself queued; endLeased probes
	// IX_Runs_SubjectQueue after the update (OUTPUT may not hold a subquery), under the
	// subject lock the caller holds, so no enqueue of the subject can slip in between.
	// The error (@p6/@p7, @p7/@p8, @p4/@p5) is written as given: NULL clears an older one.
	// Both answer only leftColumns, the run's columns their callers neither read under the
	// fence nor wrote (@t declared for them and the probe's TenantId and Subject).
	requeue: mssqlLeftTable + `UPDATE dbo.Runs SET State = 0, DueAt = @p3, Attempt = @p4, LeasedUntil = NULL,
    ErrorCode = @p6, ErrorMessage = @p7` + mssqlLeftOutput + `
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p5 IS NULL OR LeasedUntil < @p5);
SELECT ` + leftColumns + `, CAST(1 AS bit) AS SubjectQueued FROM @t;`,

	endLeased: mssqlLeftTable + `UPDATE dbo.Runs SET State = 2, Outcome = @p3, EndedAt = @p4, Attempt = @p5, LeasedUntil = NULL,
    ErrorCode = @p7, ErrorMessage = @p8` + mssqlLeftOutput + `
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p6 IS NULL OR LeasedUntil < @p6);
SELECT ` + leftColumns + `,
    CASE WHEN EXISTS (SELECT 1 FROM dbo.Runs AS q WHERE q.TenantId = t.TenantId AND q.Subject = t.Subject AND q.State = 0)
        THEN CAST(1 AS bit) ELSE CAST(0 AS bit) END AS SubjectQueued
FROM @t AS t;`,

	// endQueued: cancel or the deadline end of a queued run, after the subject lock and lock.
	endQueued: mssqlRunTable + `UPDATE dbo.Runs SET State = 2, Outcome = @p2, EndedAt = @p3, SubjectHead = 0,
    ErrorCode = @p4, ErrorMessage = @p5` + mssqlRunOutput + `
WHERE RunId = @p1 AND State = 0;` + mssqlRunSelect,

	// requestCancel: PK seek after lock; no queue change, no subject lock.
	requestCancel: mssqlRunTable + `UPDATE dbo.Runs SET CancelRequestedAt = @p2` + mssqlRunOutput + `
WHERE RunId = @p1 AND State = 1 AND CancelRequestedAt IS NULL;` + mssqlRunSelect,

	// costHeld: the claim found nothing; PK_ProjectDailyCosts range on (TenantId, Day), a
	// PK_Projects seek per row, then one IX_Runs_Claim probe per held project (a bounded
	// TOP (1) answer). No hints: it only decides between 204 and 204 with Retry-After.
	costHeld: `SELECT TOP (1) 1
FROM dbo.ProjectDailyCosts AS c
INNER JOIN dbo.Projects AS p ON p.TenantId = c.TenantId AND p.ProjectId = c.ProjectId
WHERE c.TenantId = @p1 AND c.Day = CAST(@p2 AS date) AND p.Active = 1 AND c.CostMicros >= p.DailyCostBudgetMicros
    AND (@p3 = N'[]' OR c.ProjectId IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p3) AS j))
    AND EXISTS (SELECT 1 FROM dbo.Runs AS r WHERE r.TenantId = @p1 AND r.SubjectHead = 1 AND r.ProjectId = c.ProjectId
        AND r.DueAt <= @p2 AND r.CancelRequestedAt IS NULL)
OPTION (MAXDOP 1);`,

	// budgetHeld: PK_Projects and PK_ProjectDailyCosts seeks (the day converts to date); no
	// hints: a heartbeat only reports it. 0 rows: no budget, or not reached.
	budgetHeld: `SELECT 1 FROM dbo.Projects AS p
INNER JOIN dbo.ProjectDailyCosts AS c ON c.TenantId = p.TenantId AND c.Day = @p3 AND c.ProjectId = p.ProjectId
WHERE p.TenantId = @p1 AND p.ProjectId = @p2 AND c.CostMicros >= p.DailyCostBudgetMicros;`,

	// list: IX_Runs_Tenant_Queued read backwards from the cursor, PK lookups. RECOMPILE folds
	// the catch-all filters so the cursor and a time window become seek bounds (agent, band,
	// outcome, error code, ended time and tag are residuals after the lookup; a run's release is
	// its latest attempt's, as insights group it: an IX_Attempts_Run_Step seek per run that
	// passed the others, a run's few attempts sorted; its first claim's release and the
	// attempt count, as claim latency and attempts per run count them, the same seek; hasError,
	// a bit 0/1, tests ErrorCode's presence as a residual; hasRelease, a bit, probes the same
	// seek for any attempt, since every claim names a release). The not* lists (@p23..@p28,
	// JSON arrays as nvarchar(max), N'[]' for none) are residuals: OPENJSON's [value] is
	// nvarchar(max) in the database's collation, so each comparison states BIN2, the
	// identifier columns' (Msg 468 otherwise); a NULL error code or release (no error, never
	// claimed) compares as N'', which no item is (items are identifiers), so such a run is
	// kept as the insights keep it in "(none)" (ISNULL, not COALESCE, around the release
	// subqueries: COALESCE is a CASE that runs its subquery twice, and the two reads may
	// differ under a concurrent claim); items are strings, never NULL, so NOT IN
	// cannot turn unknown. Reading check: no new seek or lock, 0 rows when all is excluded,
	// no new error (a JSON that is not an array cannot reach it: the list is marshalled). The tag probe reads the
	// run's own Tags (at most 16 items); [value] is pinned to BIN2 so tags match exactly.
	list: `SELECT TOP (@p8) ` + runColumns + ` FROM dbo.Runs
WHERE TenantId = @p1 AND (@p2 IS NULL OR State = @p2) AND (@p3 IS NULL OR Subject = @p3)
    AND (@p4 IS NULL OR ProjectId = @p4) AND (@p5 IS NULL OR Kind = @p5)
    AND (@p9 IS NULL OR AgentId = @p9) AND (@p10 IS NULL OR QueuedAt >= @p10) AND (@p11 IS NULL OR Band = @p11)
    AND (@p12 IS NULL OR Outcome = @p12) AND (@p13 IS NULL OR ErrorCode = @p13)
    AND (@p14 IS NULL OR (SELECT TOP (1) a.ReleaseId FROM dbo.ExecutionAttempts AS a
        WHERE a.RunId = Runs.RunId AND a.TenantId = @p1 ORDER BY a.StartedAt DESC, a.AttemptId DESC) = @p14)
    AND (@p15 IS NULL OR EndedAt >= @p15) AND (@p16 IS NULL OR EndedAt < @p16)
    AND (@p17 IS NULL OR EXISTS (SELECT 1 FROM OPENJSON(Runs.Tags) AS j
        WHERE j.[value] COLLATE Latin1_General_100_BIN2 = @p17))
    AND ((@p18 IS NULL AND @p19 IS NULL) OR (SELECT COUNT(*) FROM dbo.ExecutionAttempts AS a
        WHERE a.RunId = Runs.RunId AND a.TenantId = @p1) BETWEEN COALESCE(@p18, 0) AND COALESCE(@p19, 2147483647))
    AND (@p20 IS NULL OR (SELECT TOP (1) a.ReleaseId FROM dbo.ExecutionAttempts AS a
        WHERE a.RunId = Runs.RunId AND a.TenantId = @p1 ORDER BY a.StartedAt, a.AttemptId) = @p20)
    AND (@p21 IS NULL OR (@p21 = 1 AND ErrorCode IS NOT NULL) OR (@p21 = 0 AND ErrorCode IS NULL))
    AND (@p22 IS NULL OR (@p22 = 1 AND EXISTS (SELECT 1 FROM dbo.ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND a.TenantId = @p1))
        OR (@p22 = 0 AND NOT EXISTS (SELECT 1 FROM dbo.ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND a.TenantId = @p1)))
    AND (@p23 = N'[]' OR ProjectId NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p23) AS j))
    AND (@p24 = N'[]' OR AgentId NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p24) AS j))
    AND (@p25 = N'[]' OR Kind NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p25) AS j))
    AND (@p26 = N'[]' OR ISNULL((SELECT TOP (1) a.ReleaseId FROM dbo.ExecutionAttempts AS a
        WHERE a.RunId = Runs.RunId AND a.TenantId = @p1 ORDER BY a.StartedAt DESC, a.AttemptId DESC), N'')
        NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p26) AS j))
    AND (@p27 = N'[]' OR COALESCE(ErrorCode, N'') NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p27) AS j))
    AND (@p28 = N'[]' OR ISNULL((SELECT TOP (1) a.ReleaseId FROM dbo.ExecutionAttempts AS a
        WHERE a.RunId = Runs.RunId AND a.TenantId = @p1 ORDER BY a.StartedAt, a.AttemptId), N'')
        NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p28) AS j))
    AND (@p6 IS NULL OR QueuedAt < @p6 OR (QueuedAt = @p6 AND RunId < @p7))
ORDER BY QueuedAt DESC, RunId DESC
OPTION (RECOMPILE, MAXDOP 1);`,

	// parkDecisions: PK_DecisionRequests seeks on the named ids, each attempt by PK. No lock:
	// a decision's attempt and run never change. 0 when none is the run's.
	parkDecisions: `SELECT COUNT(*) FROM dbo.DecisionRequests AS d
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = d.AttemptId
WHERE d.DecisionId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
    AND d.TenantId = @p1 AND a.TenantId = @p1 AND a.RunId = @p3
OPTION (MAXDOP 1);`,
	// parkChildren: PK_Runs seeks on the named ids; ParentRunId never changes.
	parkChildren: `SELECT COUNT(*) FROM dbo.Runs
WHERE RunId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
    AND TenantId = @p1 AND ParentRunId = @p3
OPTION (MAXDOP 1);`,
	// clearWaits: PK_RunWaits range of one run (at most 2 x 100 rows), under the run's lock.
	clearWaits: `DELETE FROM dbo.RunWaits WHERE TenantId = @p1 AND RunId = @p2;`,
	// waitDecisions, waitChildren: under the fence's locks (attempt, run). The named rows are
	// read with READCOMMITTEDLOCK: under RCSI a plain read would see a decision still pending
	// (or a child still running) whose close is committing, and the run would wait on a
	// condition already closed; with the lock the park waits for that commit and sees it
	// closed. The closer never waits on the park here: its own wait-row read (closeWaits)
	// seeks only its own targets, which the park has not inserted before reading them.
	waitDecisions: `INSERT INTO dbo.RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT @p1, @p3, 0, d.DecisionId, @p4 FROM dbo.DecisionRequests AS d WITH (READCOMMITTEDLOCK)
WHERE d.DecisionId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
    AND d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p4)
OPTION (MAXDOP 1);`,
	waitChildren: `INSERT INTO dbo.RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT @p1, @p3, 1, c.RunId, @p4 FROM dbo.Runs AS c WITH (READCOMMITTEDLOCK)
WHERE c.RunId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
    AND c.TenantId = @p1 AND c.State <> 2
OPTION (MAXDOP 1);`,
	// closeWaits: the wake-up, in the transaction that closed the targets (after the
	// attempt's lock where the closer holds one: an answer, an expiry; a child's end holds
	// the child's). First each waiting run (IX_RunWaits_Target, READCOMMITTEDLOCK: a park
	// committing a wait on these targets is waited for, not missed) is U-locked to commit
	// (PK_Runs): two transactions closing one run's last two conditions queue here, and the
	// second, once the first has committed its delete (dropTargets), sees no other wait.
	// Then one UPDATE makes due each locked run that waits on nothing else (PK_RunWaits
	// range per run). 0 rows: no run was made due.
	closeWaits: `DECLARE @w TABLE (RunId uniqueidentifier PRIMARY KEY);
DECLARE @d TABLE (RunId uniqueidentifier);
INSERT INTO @w (RunId)
SELECT r.RunId FROM dbo.Runs AS r WITH (UPDLOCK, ROWLOCK)
WHERE r.TenantId = @p1 AND r.RunId IN (SELECT w.RunId FROM dbo.RunWaits AS w WITH (READCOMMITTEDLOCK)
    WHERE w.TenantId = @p1 AND w.TargetKind = @p2
        AND w.TargetId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p3) AS j))
OPTION (MAXDOP 1);
UPDATE r SET DueAt = @p4
OUTPUT inserted.RunId INTO @d
FROM dbo.Runs AS r INNER JOIN @w AS k ON k.RunId = r.RunId
WHERE r.TenantId = @p1 AND r.State = 0 AND r.DueAt > @p4
    AND NOT EXISTS (SELECT 1 FROM dbo.RunWaits AS x WITH (READCOMMITTEDLOCK) WHERE x.TenantId = @p1 AND x.RunId = r.RunId
        AND NOT (x.TargetKind = @p2
            AND x.TargetId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p3) AS j)))
OPTION (MAXDOP 1);
SELECT RunId FROM @d;`,
	// dropTargets: IX_RunWaits_Target seeks, under the run locks closeWaits took.
	dropTargets: `DELETE FROM dbo.RunWaits
WHERE TenantId = @p1 AND TargetKind = @p2
    AND TargetId IN (SELECT TRY_CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p3) AS j)
OPTION (MAXDOP 1);`,
	// waitLostDecisions: the reaper's park, under its U locks on the attempt and run:
	// IX_Decisions_Attempt seek. No hint: every writer of an attempt's decisions (an answer,
	// an expiry) locks the attempt first, so none is in flight here.
	waitLostDecisions: `INSERT INTO dbo.RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT @p1, @p3, 0, d.DecisionId, @p4 FROM dbo.DecisionRequests AS d
WHERE d.AttemptId = @p2 AND d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p4)
OPTION (MAXDOP 1);`,
	// waitsOf: PK_RunWaits range of one run, bounded.
	waitsOf: `SELECT TOP (@p3) TargetKind, TargetId, CreatedAt FROM dbo.RunWaits
WHERE TenantId = @p1 AND RunId = @p2
ORDER BY CreatedAt, TargetKind, TargetId
OPTION (MAXDOP 1);`,

	// expiredLeases, overdueQueued: across tenants, filtered-index range scans in index order
	// between the floor (@p3, the year 1 outside tests) and now; READPAST skips a run being
	// renewed, claimed or cancelled (the next tick sees it).
	expiredLeases: `SELECT TOP (@p2) RunId, TenantId, Epoch FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 1 AND LeasedUntil < @p1 AND LeasedUntil >= @p3
ORDER BY LeasedUntil
OPTION (MAXDOP 1);`,

	overdueQueued: `SELECT TOP (@p2) RunId, TenantId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE State = 0 AND DeadlineAt IS NOT NULL AND DeadlineAt < @p1 AND DeadlineAt >= @p3
ORDER BY DeadlineAt
OPTION (MAXDOP 1);`,
}
