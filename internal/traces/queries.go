package traces

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the exporter's statement set; each dialect fills every field. Every range read
// takes 1 after, 2 ceiling (versions; a row v with after < v < ceiling), 3 limit, and answers
// in Version order; all run in maintenance scope (the export crosses tenants, and each span
// carries its row's tenant).
type queries struct {
	// runs: ended runs, with the delegation that made each child run (or NULLs).
	runs string
	// attempts: ended attempts (any state but running), with their run's kind.
	attempts string
	// calls: finished calls (any status but started), with their attempt's run.
	calls string
	// decisions: closed decisions (any status but pending), with their attempt's run.
	decisions string
	// root: 1 run -> RunId and TraceParent of the run at the top of its chain (through
	// ContinuedFromRunId, then ParentRunId), or of the highest run still stored when
	// retention purged the rest.
	root string
	// checkpoints: 1 attempt, 2 limit -> the attempt's checkpoints in sequence order.
	checkpoints string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
