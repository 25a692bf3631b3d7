package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the insights; each dialect fills every field with one
// complete statement. Every statement takes the same numbered arguments:
//
//	1 tenant, 2 window start (inclusive, bucket-aligned), 3 window end (exclusive),
//	4 bucket width in seconds, 5 grouping ('' or project, agent, release, kind),
//	6 project, 7 agent, 8 release, 9 run kind (each NULL for no filter),
//	10 most groups named (the rest fold into one NULL group, "other"),
//	11 the duration histogram's upper bounds in ms, a JSON array (api.DurationBoundsMs).
//
// and answers rows of (GroupKey: NULL for other, Bucket, Series, N, Peak): N events of one
// group and series in one bucket, Peak the largest Value among them. What Bucket, Series
// and Value mean is the statement's own (below). Each statement seeks an index on
// (TenantId, the window's time column), so it reads the rows of its window only, and
// ranks the groups in the database, so its answer is at most
// buckets x series x (InsightMaxGroups + 1) rows whatever the history holds.
type queries struct {
	// runsEnded: runs ended in the window. Bucket: the window's bucket of EndedAt; Series:
	// the outcome.
	runsEnded string
	// attemptsPerRun: runs ended in the window. Bucket: how many attempts the run had,
	// capped at api.AttemptsPerRunCap; Series ''.
	attemptsPerRun string
	// claimLatency: runs queued in the window that have been claimed. Bucket: the histogram
	// bin of the time from QueuedAt to the first attempt's StartedAt; Value: that time in
	// ms; Series ''.
	claimLatency string
	// attemptsEnded: attempts ended in the window. Bucket: the window's bucket of EndedAt;
	// Series: the attempt state.
	attemptsEnded string
	// leasesLost: attempts lost (taken back by the reaper) in the window. Bucket: the
	// window's bucket of EndedAt; Series 'lost'.
	leasesLost string
	// calls: calls started in the window; the group is the target (argument 5 unused).
	// Series: the status; Bucket: the histogram bin of the call's duration, -1 while it has
	// not ended; Value: the duration in ms.
	calls string
	// decisions: decisions requested in the window; the group is the decision kind
	// (argument 5 unused). Series: the status; Bucket: the histogram bin of the time to
	// answer of an approved or rejected one, -1 for the others; Value: that time in ms.
	decisions string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
