package attempts

import (
	"strconv"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite serialises writers (immediate transactions), so a plain read inside the write
// transaction already holds the row as SQL Server's UPDLOCK does. Writes that answer with
// the row return it (RETURNING sees the Version the statement itself stamps).
var sqliteQueries = queries{
	insert: `INSERT INTO ExecutionAttempts (` + insertColumns + `,
    CorrectionCount, Version)
VALUES (` + insertValues("?") + `, 0, (SELECT Value + 1 FROM RowVersionCounter))
RETURNING Version`,
	// insertUnanswered: insert answering nothing, its Version the stamp the caller read
	// (InsertStamped). Should anything have advanced the counter since, it writes -1, which
	// the attempt's AFTER INSERT trigger refuses (a version below the counter): the claim
	// fails rather than answer a version the row does not have.
	insertUnanswered: `INSERT INTO ExecutionAttempts (` + insertColumns + `,
    CorrectionCount, Version)
VALUES (` + insertValues("?") + `, 0, CASE WHEN ` + stampArg + ` = (SELECT Value + 1 FROM RowVersionCounter) THEN ` + stampArg + ` ELSE -1 END)`,
	get:  `SELECT ` + sqliteColumns + ` FROM ExecutionAttempts WHERE TenantId = ?1 AND AttemptId = ?2`,
	lock: `SELECT ` + sqliteColumns + ` FROM ExecutionAttempts WHERE TenantId = ?1 AND AttemptId = ?2`,
	// endFenced: answers only what its caller's fence did not read.
	endFenced: `UPDATE ExecutionAttempts SET State = ?2, EndedAt = ?3, OutcomeHash = COALESCE(?4, OutcomeHash),
    ErrorCode = ?5, ErrorMessage = ?6, ErrorDetails = ?7,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId = ?1 AND State = 0
RETURNING ` + sqliteRestColumns,
	// endUnanswered: endFenced answering nothing, its Version ?8, the stamp its caller read in
	// this transaction before anything wrote (EndWhole). Should anything have advanced the
	// counter since, it writes -1, which the attempt's AFTER UPDATE trigger refuses: an end
	// fails rather than answer a version the row does not have. OR FAIL: one row, so every
	// constraint is checked before it is written, and no statement journal
	// (migrations/sqlite 000045).
	endUnanswered: `UPDATE OR FAIL ExecutionAttempts SET State = ?2, EndedAt = ?3, OutcomeHash = COALESCE(?4, OutcomeHash),
    ErrorCode = ?5, ErrorMessage = ?6, ErrorDetails = ?7,
    Version = CASE WHEN ?8 = (SELECT Value + 1 FROM RowVersionCounter) THEN ?8 ELSE -1 END
WHERE AttemptId = ?1 AND State = 0`,
	observeCancel: `UPDATE ExecutionAttempts SET CancellationObservedAt = ?2,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId = ?1 AND CancellationObservedAt IS NULL
RETURNING ` + sqliteColumns,
	patch: `UPDATE ExecutionAttempts SET Phase = COALESCE(?2, Phase), CorrectionCount = CorrectionCount + ?3,
    ContextSnapshotRef = COALESCE(?4, ContextSnapshotRef), Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId = ?1 AND State = 0
RETURNING ` + sqliteColumns,
	checkpointed: `UPDATE ExecutionAttempts SET LastCheckpointId = ?2, Phase = ?4,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE AttemptId = ?1 AND State = 0
    AND NOT EXISTS (SELECT 1 FROM Checkpoints AS k WHERE k.AttemptId = ?1 AND k.Sequence > ?3)`,
}

// stampArg is insertUnanswered's stamp: the argument after the insert's.
var stampArg = func() string {
	n := 1
	for _, c := range table {
		if c.Arg != nil {
			n++
		}
	}
	return "?" + strconv.Itoa(n)
}()
