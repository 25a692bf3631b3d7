package checkpoints

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the checkpoint store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.Checkpoints has no trigger.
//
// PK_Checkpoints (CheckpointId, COMB ids: inserts append) is clustered;
// UX_Checkpoints_Attempt_Sequence (AttemptId, Sequence), the seed's index, has no TenantId:
// TenantId is a residual after the lookup. Lock order: the fence's U locks on the attempt,
// then the run; then the checkpoint's keys; then the attempt row again (attempts'
// checkpointed converts U to X). Every append of an attempt waits on its U lock.

var mssqlQueries = queries{
	// bySequence: the exact-repeat check after the insert's 2601 or a fence refusal (under the
	// fence). 0 rows: nothing to repeat.
	bySequence: `SELECT c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef, c.AdapterVersion,
    c.ContextSnapshotRef, c.Hash, c.CreatedAt, a.FencingToken AS AttemptToken
FROM dbo.Checkpoints AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.Sequence = @p3;`,

	// get: PK seek, AttemptId residual.
	get: `SELECT ` + columns + ` FROM dbo.Checkpoints WHERE TenantId = @p1 AND AttemptId = @p2 AND CheckpointId = @p3;`,

	// insert: under the fence. 2601 on UX_Checkpoints_Attempt_Sequence -> ConflictError (the
	// transaction stays usable): Go reads the winner and answers repeat or sequence_conflict.
	insert: `INSERT INTO dbo.Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion,
    ContextSnapshotRef, Hash, CreatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10);`,

	// list: UX_Checkpoints_Attempt_Sequence range after @p3 (-1 first) in key order, TOP (@p4).
	list: `SELECT TOP (@p4) ` + columns + ` FROM dbo.Checkpoints
WHERE TenantId = @p1 AND AttemptId = @p2 AND Sequence > @p3
ORDER BY Sequence
OPTION (MAXDOP 1);`,

	// lastOfRun: the newest attempt's highest checkpoint: IX_Attempts_Run_Step seek (at most
	// MaxAttempts rows), per attempt a backward TOP (1) seek. 0 rows: Go walks to the run this
	// one continues (runLink).
	lastOfRun: `SELECT TOP (1) c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef,
    c.AdapterVersion, c.ContextSnapshotRef, c.Hash, c.CreatedAt, a.RunId
FROM dbo.ExecutionAttempts AS a
CROSS APPLY (
    SELECT TOP (1) k.CheckpointId, k.AttemptId, k.TenantId, k.Sequence, k.Phase, k.AdapterStateRef, k.AdapterVersion,
        k.ContextSnapshotRef, k.Hash, k.CreatedAt
    FROM dbo.Checkpoints AS k
    WHERE k.AttemptId = a.AttemptId AND k.TenantId = @p1
    ORDER BY k.Sequence DESC
) AS c
WHERE a.TenantId = @p1 AND a.RunId = @p2
ORDER BY a.FencingToken DESC
OPTION (MAXDOP 1);`,

	// runLink: PK_Runs seek; ContinuedFromRunId never changes (TR_Runs_Guard). 0 rows: 404 for
	// the run asked about, the end of the chain for a predecessor (purged).
	runLink: `SELECT ContinuedFromRunId, ForkedFromCheckpointId FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// forkPoint: PK_Checkpoints seek, then its attempt's PK seek (for RunId). 0 rows: purged.
	forkPoint: `SELECT ` + cColumns + `, a.RunId FROM dbo.Checkpoints AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId
WHERE c.CheckpointId = @p2 AND c.TenantId = @p1 AND a.TenantId = @p1;`,
}
