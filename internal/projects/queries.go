package projects

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the project store; each dialect fills every field.
type queries struct {
	get    string // 1 tenant, 2 project, 3 day (the cost counter's)
	insert string // 1 tenant, 2 project, 3 active, 4 retention days, 5 now, 6 daily cost budget (or NULL)
	update string // 1 tenant, 2 project, 3 active, 4 retention days, 5 now, 6 expected version, 7 daily cost budget (or NULL)
	list   string // 1 tenant, 2 after project id, 3 limit, 4 day
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
