package schedules

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the schedule store and its scheduler. Shared rules:
// docs/tsql-notes.md; a statement's comment says what is particular to it. Neither table
// has a trigger; PK_Schedules and PK_ScheduleStates (TenantId, ScheduleId) are clustered.

const mssqlColumns = `s.TenantId, s.ScheduleId, s.Cron, s.Timezone, s.RunSpec, s.Overlap, s.CatchupSeconds, s.Paused,
    s.Description, s.CreatedAt, s.UpdatedAt, s.UpdatedBy, s.Version, st.NextFireAt, st.LastFireAt, st.LastRunId, st.Fired,
    st.SkippedOverlap, st.SkippedCatchup`

var mssqlQueries = queries{
	// get: two PK seeks (one row each). 0 rows: no such schedule (or another tenant's: RLS).
	get: `SELECT ` + mssqlColumns + ` FROM dbo.Schedules AS s JOIN dbo.ScheduleStates AS st ON st.TenantId = s.TenantId AND st.ScheduleId = s.ScheduleId
WHERE s.TenantId = @p1 AND s.ScheduleId = @p2;`,
	// insert: after get found no row; two creates of one id: the second gets 2627 ->
	// ConflictError (Put answers precondition_required). RunSpec and Description go as
	// nvarchar(max) (Dialect.Text): never compared.
	insert: `INSERT INTO dbo.Schedules (TenantId, ScheduleId, Cron, Timezone, RunSpec, Overlap, CatchupSeconds, Paused, Description,
    CreatedAt, UpdatedAt, UpdatedBy)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p10, @p11);`,
	// insertState: in the same transaction as insert (FK to it).
	insertState: `INSERT INTO dbo.ScheduleStates (TenantId, ScheduleId, NextFireAt, Fired, SkippedOverlap, SkippedCatchup)
VALUES (@p1, @p2, @p3, 0, 0, 0);`,
	// update: PK seek, conditional on the version If-Match matched (0 rows: precondition_failed,
	// and the reschedule before it rolls back with it).
	update: `UPDATE dbo.Schedules SET Cron = @p3, Timezone = @p4, RunSpec = @p5, Overlap = @p6, CatchupSeconds = @p7, Paused = @p8,
    Description = @p9, UpdatedAt = @p10, UpdatedBy = @p11
WHERE TenantId = @p1 AND ScheduleId = @p2 AND Version = @p12;`,
	// reschedule: PK seek, before update (every writer takes the state row before the
	// schedule's): a scheduler's advance of the same row waits for this commit, then finds
	// NextFireAt moved (0 rows).
	reschedule: `UPDATE dbo.ScheduleStates SET NextFireAt = @p3 WHERE TenantId = @p1 AND ScheduleId = @p2;`,
	// list: PK range after @p2 in key order, TOP (@p3); the state by PK seek per row.
	list: `SELECT TOP (@p3) ` + mssqlColumns + ` FROM dbo.Schedules AS s JOIN dbo.ScheduleStates AS st ON st.TenantId = s.TenantId AND st.ScheduleId = s.ScheduleId
WHERE s.TenantId = @p1 AND s.ScheduleId > @p2 ORDER BY s.ScheduleId
OPTION (MAXDOP 1);`,
	// project: PK_Projects seek (0 or 1 row counted).
	project: `SELECT COUNT(*) FROM dbo.Projects WHERE TenantId = @p1 AND ProjectId = @p2
OPTION (MAXDOP 1);`,
	// deleteState, delete: PK seeks, child first (FK). A scheduler firing the schedule holds
	// the state row: the delete waits for its commit.
	deleteState: `DELETE FROM dbo.ScheduleStates WHERE TenantId = @p1 AND ScheduleId = @p2;`,
	delete:      `DELETE FROM dbo.Schedules WHERE TenantId = @p1 AND ScheduleId = @p2;`,
	// firings: a range of UX_Runs_Idempotency (TenantId, IdempotencyKey; filtered on IS NOT
	// NULL, repeated so the filtered index matches), backwards, TOP (@p4). BIN2 compares code
	// points, so ':' < ';' bounds exactly the keys under the prefix.
	firings: `SELECT TOP (@p4) RunId, IdempotencyKey FROM dbo.Runs
WHERE TenantId = @p1 AND IdempotencyKey > @p2 AND IdempotencyKey < @p3 AND IdempotencyKey IS NOT NULL
ORDER BY IdempotencyKey DESC
OPTION (MAXDOP 1);`,
	// due: across tenants (maintenance scope), IX_ScheduleStates_Due (filtered on NextFireAt
	// IS NOT NULL, repeated) in index order, TOP (@p2). READPAST skips a state row another
	// scheduler is firing (it is that scheduler's now); READCOMMITTEDLOCK keeps it under RCSI.
	due: `SELECT TOP (@p2) TenantId, ScheduleId, NextFireAt FROM dbo.ScheduleStates WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE NextFireAt IS NOT NULL AND NextFireAt <= @p1
ORDER BY NextFireAt
OPTION (MAXDOP 1);`,
	// advance: the firing's claim. PK seek, conditional on the NextFireAt the scan saw: of two
	// schedulers, the second waits on the first's row lock, then matches 0 rows and rolls
	// back. Takes the state row's lock first in the firing's transaction (before the run's).
	advance: `UPDATE dbo.ScheduleStates SET NextFireAt = @p4, SkippedCatchup = SkippedCatchup + @p5, SkippedOverlap = SkippedOverlap + @p6,
    Fired = Fired + @p7, LastFireAt = COALESCE(@p8, LastFireAt)
WHERE TenantId = @p1 AND ScheduleId = @p2 AND NextFireAt = @p3;`,
	// setLastRun: PK seek of the row advance holds.
	setLastRun: `UPDATE dbo.ScheduleStates SET LastRunId = @p3 WHERE TenantId = @p1 AND ScheduleId = @p2;`,
}
