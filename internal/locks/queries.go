package locks

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the lock store; each dialect fills every field.
type queries struct {
	getLock    string // 1 tenant, 2 agent, 3 task
	insertLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	updateLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	deleteLock string // 1 tenant, 2 agent, 3 task
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
