package attempts

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of attempt rows. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.ExecutionAttempts has no trigger,
// so OUTPUT needs no INTO. Lock order: the attempt row before its run; the writes below run
// under the fence, which holds U locks on both.

var mssqlQueries = queries{
	// insert: the claim's new attempt (nobody else can know its ids).
	insert: `INSERT INTO dbo.ExecutionAttempts (` + insertColumns + `,
    CorrectionCount)
OUTPUT inserted.Version
VALUES (` + insertValues("@p") + `, 0);`,

	// get: PK seek. 0 rows: missing or another tenant's.
	get: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WHERE TenantId = @p1 AND AttemptId = @p2;`,

	// lock: get with a U lock held to commit (a release drain locks attempts before runs).
	lock: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WITH (UPDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AttemptId = @p2;`,

	// endFenced: its OUTPUT only the columns the caller's fence did not read (restColumns;
	// the rowversion among them: inserted.Version is the new one). Reading check: PK seek of
	// the attempt the fence or the reaper U-locked in this transaction (no other lock, none
	// in another order); RCSI does not apply to an UPDATE's own read of a locked row; "State
	// = 0" makes a second end find nothing (AttemptEnded); OutcomeHash keeps a stored hash
	// when none is given; the error is written as given (a running attempt has none); no
	// trigger on the table, so OUTPUT without INTO.
	endFenced: `UPDATE dbo.ExecutionAttempts SET State = @p2, EndedAt = @p3, OutcomeHash = COALESCE(@p4, OutcomeHash),
    ErrorCode = @p5, ErrorMessage = @p6, ErrorDetails = @p7
OUTPUT ` + restColumns + `
WHERE AttemptId = @p1 AND State = 0;`,

	// observeCancel, patch: as endFenced, under the fence. 0 rows: the attempt ended.
	observeCancel: `UPDATE dbo.ExecutionAttempts SET CancellationObservedAt = @p2
OUTPUT ` + insertedColumns + `
WHERE AttemptId = @p1 AND CancellationObservedAt IS NULL;`,

	patch: `UPDATE dbo.ExecutionAttempts SET Phase = COALESCE(@p2, Phase), CorrectionCount = CorrectionCount + @p3,
    ContextSnapshotRef = COALESCE(@p4, ContextSnapshotRef)
OUTPUT ` + insertedColumns + `
WHERE AttemptId = @p1 AND State = 0;`,

	// checkpointed: after the checkpoint's insert; the NOT EXISTS stops at the first higher
	// sequence (no other append can be in flight). 0 rows: a late append, nothing changes.
	checkpointed: `UPDATE dbo.ExecutionAttempts SET LastCheckpointId = @p2, Phase = @p4
WHERE AttemptId = @p1 AND State = 0
    AND NOT EXISTS (SELECT 1 FROM dbo.Checkpoints AS k WHERE k.AttemptId = @p1 AND k.Sequence > @p3);`,
}
