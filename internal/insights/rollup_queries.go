package insights

import (
	"fmt"
	"strings"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// rollupSets holds the roll-up statement sets, one per dialect, each registered by its
// rollup_<dialect>.go.
var rollupSets sqldb.QuerySets[rollupQueries]

// rollupQueries is the statement set of the roll-ups: the projector's reads of changed
// source rows and its writes of facts and cells, and the insights' read of cells.
type rollupQueries struct {
	// runs, attempts, calls, decisions: the source table's rows with 1 < Version < 2, in
	// Version order, at most 3, each as a sourceRow (the columns its table lacks NULL).
	runs      string
	attempts  string
	calls     string
	decisions string
	// factsOf reads the facts of source row (1 tenant, 2 source, 3 id).
	factsOf string
	// insertFacts and updateFacts store its facts 4.
	insertFacts string
	updateFacts string
	// upsertCell adds N 13 to the cell (1 tenant, 2 metric, 15 dimension set, 3 grain, 4 bucket start,
	// 5 hash) and raises its Peak to 14, creating it with dimensions 6..12 and 16 (error code)
	// when it is new.
	upsertCell string
	// cells reads the cells of 1 tenant, 2 metric, 11 dimension set, 3 grain with 4 <= bucket start
	// < 5 whose N is not zero, filtered by 6 project, 7 agent, 8 release, 9 kind, 10 series
	// (each NULL for any).
	cells string
	// coarseCurrent is 1 when projector 1's coarse cells are complete through its Position
	// (CoarseThrough = Position), else 0.
	coarseCurrent string
	// markCoarse sets projector 1's CoarseThrough to 2.
	markCoarse string
	// clearCoarse deletes every tenant's cells of grain 1; buildCoarse derives the cells of
	// grain 1 from those of grain 2 (each a divisor of 1) of the binned metrics: N summed,
	// the largest Peak, per (tenant, metric, dimension set, bucket of 1, CellHash).
	clearCoarse string
	buildCoarse string
}

// binnedList is the binned metrics as an SQL list, in metric order.
func binnedList() string {
	var out []string
	for m := metricRunsEnded; m <= metricUsage; m++ {
		if binned[m] {
			out = append(out, fmt.Sprint(int(m)))
		}
	}
	return strings.Join(out, ", ")
}
