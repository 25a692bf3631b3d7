package retention

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the purge. Shared rules: docs/tsql-notes.md; a statement's
// comment says what is particular to it. Every statement runs in MaintenanceScope (the
// documented bypass) and still names the tenant it works on, so every one carries
// OPTION (MAXDOP 1). Run ids travel as one JSON array (@p2, at most one batch).
//
// Bounded work: a chunk delete removes at most @p3 rows (2,000 by default) of one table in
// its own short transaction, below the 5,000 locks at which SQL Server escalates. Order of
// a batch: one transaction re-judges the chains under U locks (runs, then projects),
// writes tombstones, records the runs in PurgeBacklog and deletes them; then, each in its
// own transaction, the attempts' Checkpoints, CallRecords, DecisionRequests,
// SubAgentDelegations, then ExecutionAttempts (RunId has no FK, so attempts may outlive
// their run for that moment), then the backlog rows. A 547 or 2627 fails the batch, which
// is logged and retried by the next pass.

// mssqlChain is the recursive walk of the chains in @p2: each root (PK_Runs), then every run
// continuing one already in the chain (UX_Runs_ContinuedFrom, unique: a chain is a list,
// bounded by MaxAttempts). hint and projectHint are the table hints: empty for members,
// UPDLOCK for lockMembers. MAXRECURSION 0: no 530.
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

// mssqlAttemptsOf is the attempts of the runs in @p2 (IX_Attempts_Run_Step seeks).
const mssqlAttemptsOf = `SELECT a.AttemptId FROM dbo.ExecutionAttempts AS a
    WHERE a.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND a.TenantId = @p1`

var mssqlQueries = queries{
	// tenants: PK_Projects range after @p1 in key order: a stream aggregate, TOP (@p2) tenants.
	tenants: `SELECT TOP (@p2) TenantId, MIN(RetentionDays) AS MinDays FROM dbo.Projects
WHERE TenantId > @p1 GROUP BY TenantId ORDER BY TenantId
OPTION (MAXDOP 1);`,

	// roots: IX_Runs_Tenant_Queued pinned, forward range in index order, TOP (@p6); reads
	// every run queued before the cutoff, purgeable or not, once per pass (the keyset).
	roots: `SELECT TOP (@p6) r.RunId, r.QueuedAt
FROM dbo.Runs AS r WITH (INDEX (IX_Runs_Tenant_Queued))
INNER JOIN dbo.Projects AS p ON p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId
WHERE r.TenantId = @p1 AND r.QueuedAt < @p3 AND r.QueuedAt >= @p4 AND (r.QueuedAt > @p4 OR r.RunId > @p5)
    AND r.State = 2 AND r.ContinuedFromRunId IS NULL
    AND r.EndedAt < DATEADD(day, -p.RetentionDays, @p2)
ORDER BY r.QueuedAt, r.RunId
OPTION (MAXDOP 1);`,

	// members: the chains without hints. HasChild seeks IX_Runs_Parent without a tenant filter
	// (FK_Runs_ParentRun has none). 0 rows: purged meanwhile.
	members: mssqlChain("", ""),

	// lockMembers: the re-judgement before anything is deleted: U locks on the chains' runs and
	// their projects, held to commit. A continue of a chain run waits for it (or the purge for
	// the continue); a child enqueued since HasChild was read makes deleteRuns fail with 547
	// and the whole transaction roll back. Lock order: runs, projects, then the keys written.
	lockMembers: mssqlChain(" WITH (UPDLOCK, ROWLOCK)", " WITH (UPDLOCK, ROWLOCK)"),

	// countAttempts (dry run): always one row.
	countAttempts: `SELECT COUNT(*) FROM dbo.ExecutionAttempts
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1
OPTION (MAXDOP 1);`,

	// Chunk deletes of the attempts' children, after their runs are gone: nothing else can
	// lock these rows (every write is fenced on a leased run). Fewer than @p3 rows: done.
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

	// deleteAttempts: the four child FKs are checked by seeks of the children's AttemptId
	// indexes; a leftover is 547 and the backlog keeps the runs for the next purge.
	deleteAttempts: `DELETE TOP (@p3) FROM dbo.ExecutionAttempts
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1
OPTION (MAXDOP 1);`,

	// tombstones: rows lockMembers holds; a second purge of the chain finds no runs, so 2627 is
	// not expected.
	tombstones: `INSERT INTO dbo.IdempotencyTombstones (TenantId, IdempotencyKey, RunId, PurgedAt)
SELECT r.TenantId, r.IdempotencyKey, r.RunId, @p3
FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND r.TenantId = @p1
    AND r.IdempotencyKey IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM dbo.IdempotencyTombstones AS t
        WHERE t.TenantId = r.TenantId AND t.IdempotencyKey = r.IdempotencyKey)
OPTION (MAXDOP 1);`,

	// deleteRuns: rows lockMembers holds. The self-referencing FKs are checked once per
	// statement (a run and its continuation go together) through the unfiltered IX_Runs_Parent
	// and IX_Runs_ContinuedFromRunId. State = 2 is a last guard. 0 rows: another purge won.
	deleteRuns: `DELETE FROM dbo.Runs
WHERE RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1 AND State = 2
OPTION (MAXDOP 1);`,

	// backlog: just before deleteRuns, the same ended runs (the same guard).
	backlog: `INSERT INTO dbo.PurgeBacklog (TenantId, RunId, PurgedAt)
SELECT r.TenantId, r.RunId, @p3
FROM dbo.Runs AS r
WHERE r.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND r.TenantId = @p1 AND r.State = 2
OPTION (MAXDOP 1);`,

	// backlogPage: PK_PurgeBacklog range after the keyset ('' and the nil id to start), TOP (@p3).
	backlogPage: `SELECT TOP (@p3) TenantId, RunId FROM dbo.PurgeBacklog
WHERE TenantId >= @p1 AND (TenantId > @p1 OR RunId > @p2)
ORDER BY TenantId, RunId
OPTION (MAXDOP 1);`,

	// backlogDone: PK seeks per run, after the chunks. 0 rows: another replica finished them.
	backlogDone: `DELETE FROM dbo.PurgeBacklog
WHERE TenantId = @p1 AND RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j)
OPTION (MAXDOP 1);`,
}
