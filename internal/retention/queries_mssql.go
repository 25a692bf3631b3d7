package retention

// The SQL Server query set of the purge. Every statement takes @p1..@pN in the order
// queries.go documents (the same list the SQLite statement gets) and is one statement, so
// RowsAffected is its own count (none of the tables deleted from has a DELETE trigger;
// TR_Runs_Guard is AFTER UPDATE only).
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section). Conventions for every statement below:
//   - MaintenanceScope: SESSION_CONTEXT LedgerMaintenance = 1, the documented bypass of
//     dbo.fn_TenantAccess, so reads see and writes may touch every tenant. Every statement
//     still names the tenant it works on (the purge goes tenant by tenant).
//   - READ COMMITTED, explicitly (sqldb.once). Each statement is read for both settings of
//     READ_COMMITTED_SNAPSHOT (RCSI).
//   - Run ids travel as one JSON array of strings (@p2, at most one batch: 500 by default),
//     declared nvarchar(max) whatever its length (sqldb.Dialect.JSON: one cached plan per
//     statement, not one per batch size), read with OPENJSON (compatibility level 130 or
//     later, as the claim already needs; Msg 208 below it) and CAST to uniqueidentifier, so
//     comparisons convert the list, never a column, and each id is a seek.
//   - Bounded work per statement: a chunk delete removes at most @p3 rows (2,000 by
//     default) of one table and locks at most that many keys per index, below the 5,000
//     locks per statement and index at which SQL Server escalates to a table lock
//     (TSQL.md, "Retention deletes"). Each chunk runs in its own short transaction; the
//     final transaction of a batch deletes at most one batch of runs.
//   - Order of a batch: one transaction that re-judges the chains under U locks (runs, then
//     their projects), writes the tombstones, records the runs in PurgeBacklog and deletes
//     them; then, in their own short transactions, the runs' attempts' Checkpoints,
//     CallRecords, DecisionRequests, SubAgentDelegations, then ExecutionAttempts (their
//     foreign keys point at the attempt; ExecutionAttempts.RunId has no foreign key, so the
//     attempts may outlive their run for the moment the chunks take), then the backlog rows.
//   - SESSION_CONTEXT in parallel plans (TSQL.md; a documented SQL Server issue: wrong
//     results or an access violation when the RLS predicate's SESSION_CONTEXT runs in a
//     parallel plan on a reset pooled session): every statement here runs in maintenance
//     scope, so every one carries OPTION (MAXDOP 1); on these key seeks a serial plan costs
//     nothing.
//   - Error numbers and their mapping (sqldb MapError): 547 FOREIGN KEY/REFERENCE ->
//     ErrBadReference (a run or attempt that something still references: the batch rolls
//     back, is logged and retried by the next pass); 2627 on PK_IdempotencyTombstones ->
//     ConflictError (same handling; not expected, see tombstones); 1205 (deadlock victim),
//     1222, 3960 -> ErrRetryable (db.Write runs the transaction again); 530 (recursion
//     limit) cannot arise with MAXRECURSION 0; sql.ErrNoRows does not arise (no statement
//     here needs a row). Everything else fails the batch, which is logged and skipped.

// mssqlChain is the recursive walk of the chains in @p2: each root, then every run whose
// ContinuedFromRunId is a run already in the chain (UX_Runs_ContinuedFrom: unique, so a
// chain is a list, bounded by the root's MaxAttempts). The anchor seeks PK_Runs per root;
// the recursive member seeks UX_Runs_ContinuedFrom (filtered ContinuedFromRunId IS NOT
// NULL; the predicate repeats the filter so the index matches) and looks up PK_Runs for
// TenantId. The recursive member has no subquery, TOP, aggregate or outer join (not allowed
// there); hints on dbo.Runs inside it are allowed (only a hint on the CTE reference is not).
// hint is the table hint of the runs' accesses and projectHint of the project's: empty for
// members, UPDLOCK for lockMembers.
func mssqlChain(hint, projectHint string) string {
	return `WITH chain (RootId, RunId) AS (
    SELECT r.RunId, r.RunId
    FROM dbo.Runs AS r` + hint + `
    WHERE r.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND r.TenantId = @p1
    UNION ALL
    SELECT c.RootId, x.RunId
    FROM chain AS c
    INNER JOIN dbo.Runs AS x` + hint + ` ON x.ContinuedFromRunId = c.RunId
    WHERE x.ContinuedFromRunId IS NOT NULL AND x.TenantId = @p1
)
SELECT ch.RootId, m.RunId, m.State, m.EndedAt, m.IdempotencyKey,
    CAST(CASE WHEN EXISTS (SELECT 1 FROM dbo.Runs AS k WHERE k.ParentRunId = m.RunId AND k.ParentRunId IS NOT NULL)
        THEN 1 ELSE 0 END AS bit) AS HasChild,
    p.RetentionDays
FROM chain AS ch
INNER JOIN dbo.Runs AS m ON m.RunId = ch.RunId
INNER JOIN dbo.Projects AS p` + projectHint + ` ON p.TenantId = m.TenantId AND p.ProjectId = m.ProjectId
OPTION (MAXRECURSION 0, MAXDOP 1);`
}

// mssqlAttemptsOf is the attempts of the runs in @p2: an IX_Attempts_Run_Step (RunId,
// StepId) seek per run, which carries the clustered key AttemptId; TenantId is checked
// through a PK_ExecutionAttempts lookup.
const mssqlAttemptsOf = `SELECT a.AttemptId FROM dbo.ExecutionAttempts AS a
    WHERE a.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND a.TenantId = @p1`

var mssqlQueries = queries{
	// tenants: PK_Projects (TenantId, ProjectId), a range seek TenantId > @p1 read in key
	// order, so MIN per tenant is a stream aggregate and TOP stops after @p2 tenants. No
	// hints: under RCSI the committed image, no locks; without RCSI short S locks (a project
	// row being updated by a claim is waited for briefly). 0 rows: no more tenants.
	tenants: `SELECT TOP (@p2) TenantId, MIN(RetentionDays) AS MinDays FROM dbo.Projects
WHERE TenantId > @p1 GROUP BY TenantId ORDER BY TenantId
OPTION (MAXDOP 1);`,

	// roots: IX_Runs_Tenant_Queued (TenantId, QueuedAt, RunId), pinned, a forward range seek
	// TenantId = @p1, @p4 <= QueuedAt < @p3 in index order (no sort; TOP stops after @p6
	// roots), the keyset's OR residual; PK_Runs lookups for State, ContinuedFromRunId,
	// EndedAt and ProjectId; PK_Projects seek for RetentionDays. DATEADD(day, -n, @p2) works
	// on datetimeoffset and compares with EndedAt without converting the column. The seek
	// reads every run of the tenant queued before the latest cutoff, purgeable or not
	// (running, another project's longer retention, waiting parents); the keyset makes a
	// pass read each of them once. An index on (TenantId, ProjectId, EndedAt) WHERE State =
	// 2 would seek purgeable roots only (not in the schema; see the package doc). No hints:
	// under RCSI the committed image, no locks; without RCSI short S locks (only an old run
	// that is still being worked on can be X-locked, and only briefly). A row that becomes
	// purgeable behind the keyset is found by the next pass. 0 rows: the tenant is done.
	roots: `SELECT TOP (@p6) r.RunId, r.QueuedAt
FROM dbo.Runs AS r WITH (INDEX (IX_Runs_Tenant_Queued))
INNER JOIN dbo.Projects AS p ON p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId
WHERE r.TenantId = @p1 AND r.QueuedAt < @p3 AND r.QueuedAt >= @p4 AND (r.QueuedAt > @p4 OR r.RunId > @p5)
    AND r.State = 2 AND r.ContinuedFromRunId IS NULL
    AND r.EndedAt < DATEADD(day, -p.RetentionDays, @p2)
ORDER BY r.QueuedAt, r.RunId
OPTION (MAXDOP 1);`,

	// members: mssqlChain without hints, in the selection's read transaction. HasChild seeks
	// IX_Runs_Parent (ParentRunId; unfiltered since migration 000011, so the repeated IS NOT
	// NULL is only a residual) per member: it is not filtered on tenant on purpose, since
	// FK_Runs_ParentRun is not either. Under RCSI the
	// committed image; without RCSI short S locks. 0 rows: the roots were purged meanwhile.
	members: mssqlChain("", ""),

	// lockMembers: mssqlChain WITH (UPDLOCK, ROWLOCK) on the roots and their continuations
	// and on their projects' rows: U locks on their PK_Runs keys (and the
	// UX_Runs_ContinuedFrom keys read) and PK_Projects keys, held to commit; a locking read
	// under RCSI too, so it returns the latest committed rows. This is the re-judgement
	// before anything of a chain is deleted. It waits for, and then sees, a continue of a
	// chain run (Continue U-locks the run it continues first, then inserts), and a continue
	// that comes later waits for this purge and then finds its run gone (404). It waits for
	// a project update in flight and sees its new RetentionDays; an update that comes later
	// waits for the purge (a chain judged past the old retention goes; the new one applies
	// from then on). It does not lock a child run being enqueued under a chain run (the
	// insert's foreign key check takes S, compatible with U): if one commits after HasChild
	// was read, deleteRuns fails with 547 and the whole transaction rolls back (nothing of
	// the chain is deleted yet), to be retried by a later pass that sees the child. U locks
	// block no plain reader. Lock order: runs, then projects, then the tombstone, backlog
	// and run keys this transaction writes. Writers that hold a project row (a project
	// update) take no run lock; writers that hold a run (continue, claim) read the project
	// without a lasting lock; so no cycle through the project rows. A holder's fenced write
	// locks attempt then run and never touches a purgeable (ended) chain's run: the fence
	// refuses an ended run before any write.
	lockMembers: mssqlChain(" WITH (UPDLOCK, ROWLOCK)", " WITH (UPDLOCK, ROWLOCK)"),

	// countAttempts (dry run): IX_Attempts_Run_Step seek per run; always one row.
	countAttempts: `SELECT COUNT(*) FROM dbo.ExecutionAttempts
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1
OPTION (MAXDOP 1);`,

	// Chunk deletes of the attempts' children, after their runs are deleted (the runs are
	// in PurgeBacklog): IX_Attempts_Run_Step seeks for the attempt ids, then the child
	// table's AttemptId index (UX_Checkpoints_Attempt_Sequence, UX_Calls_Attempt_Sequence,
	// IX_Decisions_Attempt, IX_Delegations_Attempt) per attempt; X locks on at most @p3
	// rows' keys in each index of the table, held to the end of the chunk's own short
	// transaction. No table references these tables, so no FK check. The rows belong to
	// ended attempts of runs that no longer exist, which no holder can write any more (every
	// write is fenced on a leased run, and the fence finds no run), so nothing else locks
	// them but another replica's drain of the same backlog, which this waits for and then
	// finds nothing. Under RCSI a DELETE still finds its rows with U locks on the latest
	// committed version. RowsAffected below @p3: the table is done for this batch.
	deleteCheckpoints: `DELETE TOP (@p3) FROM dbo.Checkpoints
WHERE AttemptId IN (` + mssqlAttemptsOf + `) AND TenantId = @p1
OPTION (MAXDOP 1);`,
	deleteCalls: `DELETE TOP (@p3) FROM dbo.CallRecords
WHERE AttemptId IN (` + mssqlAttemptsOf + `) AND TenantId = @p1
OPTION (MAXDOP 1);`,
	deleteDecisions: `DELETE TOP (@p3) FROM dbo.DecisionRequests
WHERE AttemptId IN (` + mssqlAttemptsOf + `) AND TenantId = @p1
OPTION (MAXDOP 1);`,
	deleteDelegations: `DELETE TOP (@p3) FROM dbo.SubAgentDelegations
WHERE AttemptId IN (` + mssqlAttemptsOf + `) AND TenantId = @p1
OPTION (MAXDOP 1);`,

	// deleteAttempts: IX_Attempts_Run_Step seek per run; X locks on at most @p3 attempts'
	// keys per index. The four child foreign keys are checked by seeks of the children's
	// AttemptId indexes (the chunks before emptied them; a leftover is 547 -> the drain
	// fails, is logged, and the backlog keeps the runs for the next purge). Nothing
	// references Runs from here: ExecutionAttempts.RunId has no FK.
	deleteAttempts: `DELETE TOP (@p3) FROM dbo.ExecutionAttempts
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1
OPTION (MAXDOP 1);`,

	// tombstones: PK_Runs seeks (rows U-locked by lockMembers in this transaction), the
	// NOT EXISTS a PK_IdempotencyTombstones seek; inserts X-lock the new keys. A run's key
	// gets at most one tombstone: a second purge of the same chain waits on lockMembers and
	// then finds no runs, so 2627 is not expected (mapped to ConflictError if it happens: the
	// batch is skipped). FK to dbo.Tenants: a short S lock on the tenant row. RLS: the block
	// predicate passes under the maintenance bypass. @p3 (datetimeoffset(7), whole
	// milliseconds) fits PurgedAt datetimeoffset(3) exactly. 0 rows: no key to keep.
	tombstones: `INSERT INTO dbo.IdempotencyTombstones (TenantId, IdempotencyKey, RunId, PurgedAt)
SELECT r.TenantId, r.IdempotencyKey, r.RunId, @p3
FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND r.TenantId = @p1
    AND r.IdempotencyKey IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM dbo.IdempotencyTombstones AS t
        WHERE t.TenantId = r.TenantId AND t.IdempotencyKey = r.IdempotencyKey)
OPTION (MAXDOP 1);`,

	// deleteRuns: PK_Runs seeks, U -> X on rows lockMembers holds, at most one batch of rows
	// (500 by default) per index; the chains' attempts and their rows are still there (no
	// foreign key points from them to Runs) and go in the chunks after this commits.
	// FK_Runs_ParentRun and FK_Runs_ContinuedFromRun reference dbo.Runs itself: SQL Server
	// checks them once for the whole statement, after its deletes, so a run and its
	// continuation go in one statement; the check looks for a remaining run whose
	// ParentRunId or ContinuedFromRunId is a deleted RunId, a seek per deleted run of the
	// unfiltered IX_Runs_Parent and IX_Runs_ContinuedFromRunId (migration 000011 added them
	// for these checks: the optimizer may not match a filtered index there). A child
	// run enqueued under a chain run since lockMembers is 547 -> ErrBadReference: the whole
	// transaction (tombstones, backlog, deletes) rolls back, and nothing of the chain is
	// gone. State = 2 is a last guard: only ended runs. No trigger fires on DELETE. 0 rows:
	// another purge removed them.
	deleteRuns: `DELETE FROM dbo.Runs
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1 AND State = 2
OPTION (MAXDOP 1);`,

	// backlog: in the transaction of deleteRuns, just before it, the same ended runs
	// (PK_Runs seeks of rows lockMembers holds, State = 2 the same guard, so the backlog
	// names exactly the runs deleteRuns deletes). Inserts X-lock new PK_PurgeBacklog keys
	// (TenantId, RunId); FK to dbo.Tenants takes a short S lock on the tenant row. A run is
	// recorded once: a second purge of the chain waits on lockMembers and then finds no
	// runs, so 2627 is not expected (ConflictError: the batch rolls back and is logged).
	// RLS: maintenance scope passes the block predicate. 0 rows: nothing to record.
	backlog: `INSERT INTO dbo.PurgeBacklog (TenantId, RunId, PurgedAt)
SELECT r.TenantId, r.RunId, @p3
FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND r.TenantId = @p1 AND r.State = 2
OPTION (MAXDOP 1);`,

	// backlogPage: PK_PurgeBacklog (TenantId, RunId) range seek after the keyset, in key
	// order, TOP (@p3): no sort. @p1 is '' and @p2 the nil uniqueidentifier (the smallest
	// in SQL Server's order too) to start. Normally the table is empty (a drain clears its
	// rows as it finishes), so this reads nothing. No hints: under RCSI the committed image,
	// no locks; without RCSI short S locks. 0 rows: no earlier purge to finish.
	backlogPage: `SELECT TOP (@p3) TenantId, RunId FROM dbo.PurgeBacklog
WHERE TenantId >= @p1 AND (TenantId > @p1 OR RunId > @p2)
ORDER BY TenantId, RunId
OPTION (MAXDOP 1);`,

	// backlogDone: PK_PurgeBacklog seeks (TenantId, RunId) per listed run; X locks on at most
	// one batch of keys, after the chunks deleted the runs' attempts. 0 rows: another
	// replica's drain finished them. No expected errors.
	backlogDone: `DELETE FROM dbo.PurgeBacklog
WHERE TenantId = @p1 AND RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
OPTION (MAXDOP 1);`,
}
