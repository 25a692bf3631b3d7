package attempts

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of attempt rows; each dialect fills every field.
type queries struct {
	insert string // the columns of table that have an insert argument, in order (insertArgs) -> Version
	// insertUnanswered: insert answering nothing, its Version the argument after insertArgs',
	// the stamp its caller read in this transaction (InsertStamped); filled where the
	// dialect's stamp can be read before the write (SQLite).
	insertUnanswered string `sqllint:"optional"`
	get              string // 1 tenant, 2 attempt
	lock             string // 1 tenant, 2 attempt
	// endFenced: 1 attempt, 2 state, 3 now, 4 outcome hash, 5 error code, 6 error message, 7
	// error details (5-7 NULL: none) -> restColumns (EndFenced); no row when not running.
	endFenced string
	// endUnanswered: as endFenced, 8 the stamp the caller read (EndWhole), answering nothing;
	// filled where the dialect's stamp can be read before the write (SQLite).
	endUnanswered string `sqllint:"optional"`
	observeCancel string // 1 attempt, 2 now -> the attempt's columns
	patch         string // 1 attempt, 2 phase or NULL, 3 corrections to add (0 or 1), 4 context snapshot ref or NULL -> the attempt's columns; no row when not running
	checkpointed  string // 1 attempt, 2 checkpoint, 3 its sequence, 4 its phase
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
