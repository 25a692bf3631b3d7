package attempts

// The SQL Server statements of attempt rows. Each carries its reading check (TSQL.md, last
// section). Common to all:
//   - Transactions are READ COMMITTED, explicitly; the database may have
//     READ_COMMITTED_SNAPSHOT (RCSI) on or off, and every statement is read for both.
//   - dbo.ExecutionAttempts has no trigger, so OUTPUT without INTO is allowed (Msg 334 is
//     about tables with triggers); OUTPUT inserted.* shows the row as the statement left it,
//     rowversion included (binary(8)).
//   - Row-level security adds its TenantId filter to every access; a write of another
//     tenant's row would be 33504 (ErrRefused), which cannot happen: the rows written were
//     first read under the session's tenant.
//   - Errors are mapped by sqldb (the dialect's MapError): 1205/1222/3960 -> ErrRetryable
//     (the transaction runs again), sql.ErrNoRows -> ErrNotFound, 2601/2627 -> a conflict.
//   - Lock order (DESIGN.md section 4): the attempt row before its run. Writes below run
//     under the fence, which holds U locks on both; converting the attempt's U to X here
//     waits for nothing but plain readers without RCSI.

// insertedColumns is columns as OUTPUT inserted.* spells them.
const insertedColumns = `inserted.AttemptId, inserted.RunId, inserted.StepId, inserted.TenantId, inserted.ProjectId,
inserted.EnvironmentId, inserted.LeaseId, inserted.FencingToken, inserted.SnapshotId, inserted.ReleaseId,
inserted.AdapterVersion, inserted.AgentId, inserted.ModelProfileId, inserted.State, inserted.Phase,
inserted.CorrectionCount, inserted.MaxCorrections, inserted.LastCheckpointId, inserted.ContextSnapshotRef,
inserted.OutcomeHash, inserted.CancellationObservedAt, inserted.StartedAt, inserted.EndedAt,
inserted.Version`

var mssqlQueries = queries{
	// insert: the claim's new attempt. Writes PK_ExecutionAttempts and every index (X on the
	// new keys; nobody else can know the new AttemptId or LeaseId). No foreign key. RCSI: no
	// difference for an insert. Always one row out. Errors: 2627/2601 on a repeated id or
	// LeaseId (random, not expected) -> a conflict passed up as a 500; 33504 not expected.
	insert: `INSERT INTO dbo.ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, EnvironmentId, LeaseId,
    FencingToken, SnapshotId, ReleaseId, AgentId, ModelProfileId, State, Phase, CorrectionCount, MaxCorrections,
    StartedAt, AdapterVersion)
OUTPUT ` + insertedColumns + `
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12, @p13, @p14, 0, @p15, @p16, @p17);`,

	// get: PK_ExecutionAttempts seek, TenantId residual. No hints: under RCSI the last
	// committed row (or this transaction's own change); without RCSI a short S lock. 0 rows
	// -> ErrNotFound (missing or another tenant's).
	get: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WHERE TenantId = @p1 AND AttemptId = @p2;`,

	// lock: get holding a U lock on the key until commit (a release drain locks the running
	// attempts of a release before their runs). UPDLOCK makes it a locking read under RCSI.
	// 0 rows -> ErrNotFound. Errors: 1205/1222 -> ErrRetryable.
	lock: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WITH (UPDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AttemptId = @p2;`,

	// end: PK seek of a row the fence (or the reaper) U-locked; U converts to X. "State = 0"
	// makes a second end find nothing: 0 rows -> ErrNotFound -> AttemptEnded (not expected
	// under the fence). RCSI: an UPDATE reads the latest committed row. OutcomeHash keeps a
	// stored hash when none is given.
	end: `UPDATE dbo.ExecutionAttempts SET State = @p2, EndedAt = @p3, OutcomeHash = COALESCE(@p4, OutcomeHash)
OUTPUT ` + insertedColumns + `
WHERE AttemptId = @p1 AND State = 0;`,

	// observeCancel: as end, under the fence; the caller checked that nothing is recorded
	// yet, so one row. 0 rows -> ErrNotFound.
	observeCancel: `UPDATE dbo.ExecutionAttempts SET CancellationObservedAt = @p2
OUTPUT ` + insertedColumns + `
WHERE AttemptId = @p1 AND CancellationObservedAt IS NULL;`,

	// patch: as end, under the fence (a holder's PATCH, a decision request). 0 rows -> the
	// attempt ended -> ErrNotFound -> AttemptEnded.
	patch: `UPDATE dbo.ExecutionAttempts SET Phase = COALESCE(@p2, Phase), CorrectionCount = CorrectionCount + @p3,
    ContextSnapshotRef = COALESCE(@p4, ContextSnapshotRef)
OUTPUT ` + insertedColumns + `
WHERE AttemptId = @p1 AND State = 0;`,

	// checkpointed: the one update of a checkpoint append, under the fence, after the insert.
	// PK seek of the U-locked attempt (U to X when it qualifies). NOT EXISTS seeks
	// UX_Checkpoints_Attempt_Sequence (AttemptId = @p1 AND Sequence > @p3), stopping at the
	// first row; it sees this transaction's own insert and every committed append, and no
	// other append of the attempt can be in flight (each waits on the attempt's U lock), so
	// under RCSI (versioned) and without it (short S locks, no waits) the answer is the same.
	// Checkpoints has no TenantId in that index (the seed's); RLS filters the lookups. 0 rows
	// (a higher sequence exists) is the expected answer to a late append: nothing changes.
	// @p3 is int, @p4 int. Errors: 1205 -> ErrRetryable.
	checkpointed: `UPDATE dbo.ExecutionAttempts SET LastCheckpointId = @p2, Phase = @p4
WHERE AttemptId = @p1 AND State = 0
    AND NOT EXISTS (SELECT 1 FROM dbo.Checkpoints AS k WHERE k.AttemptId = @p1 AND k.Sequence > @p3);`,
}
