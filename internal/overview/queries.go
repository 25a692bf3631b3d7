package overview

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the overview reader; each dialect fills every field.
// Every statement reads an index whose filter or leading keys bound it to the live part
// of the data (queued runs, leased runs, pending decisions, lost attempts), never the
// whole history.
type queries struct {
	// One tenant (the console's overview).
	queued  string // 1 tenant, 2 now -> ProjectId, Band, Runs, OldestDue (NULL: none due)
	leased  string // 1 tenant -> ProjectId, Band, Runs
	lost    string // 1 tenant, 2 since -> ProjectId, Runs
	pending string // 1 tenant, 2 now -> ProjectId, Runs
	budget  string // 1 tenant -> MaxLeasedRuns
	// waiting: 1 tenant, 2 now -> ProjectId, Band, Runs of the queued runs parked on a
	// condition (a RunWaits row) and not yet due by their park's dueAt; counted in queued
	// too, which the reader subtracts.
	waiting string

	// Every tenant (the metrics' gauges; maintenance scope).
	allQueued  string // 1 now -> TenantId, Band, Runs, OldestDue
	allLeased  string // -> TenantId, Band, Runs
	allPending string // 1 now -> TenantId, Runs
	allWaiting string // 1 now -> TenantId, Band, Runs
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
