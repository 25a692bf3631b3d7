package feed

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the runner; each dialect fills every field.
type queries struct {
	// ensure creates a projector's row at position 0 if it has none: 1 name, 2 now.
	ensure string
	// lease takes or renews the lease of projector 1 for holder 2 at now 3 until 4: it
	// changes the row (and locks it until commit) only when the holder already holds it or
	// the lease is free or expired.
	lease string
	// position reads the projector's last applied version: 1 name.
	position string
	// ceiling is one past the last version whose transaction has committed: every version
	// below it is committed and visible.
	ceiling string
	// advance stores position 2 of projector 1, the time 3 it caught up (NULL: it did not,
	// keep the last) and 4 now.
	advance string
	// advanceFrom is advance for an exporter: it stores position 2 (caught up at 3, now 4)
	// only while holder 6 holds the lease and the position is still 5, the one its batch
	// was read from (0 rows: another replica took over meanwhile).
	advanceFrom string
	// statuses reads every projector's position and watermark.
	statuses string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
