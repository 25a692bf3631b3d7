package retention

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the purge; each dialect fills every field with complete
// statements taking the numbered arguments listed here. "runs" and "roots" arguments are
// JSON arrays of run ids (at most one batch).
type queries struct {
	// tenants: the tenants that have projects, after 1 (a tenant id, "" to start), in id
	// order, with their shortest retention. 1 after, 2 limit -> TenantId, MinDays.
	tenants string
	// roots: chain roots (ContinuedFromRunId IS NULL) of the tenant that ended before their
	// project's cutoff (now - RetentionDays), in (QueuedAt, RunId) order after the keyset
	// (4, 5) and queued before 3 (the tenant's latest cutoff: a root that ended before its
	// cutoff was queued before it too, which bounds the seek). 1 tenant, 2 now, 3 latest
	// cutoff, 4 keyset queued at, 5 keyset run, 6 limit -> RunId, QueuedAt.
	roots string
	// members: every run of the given chains (the root and its continuations, followed
	// through ContinuedFromRunId), with what the purge decides on: state, end, idempotency
	// key, whether a run outside the chain names it as its parent, and the project's current
	// retention. 1 tenant, 2 roots -> RootId, RunId, State, EndedAt, IdempotencyKey,
	// HasChild, RetentionDays.
	members string
	// lockMembers is members holding the chains' run rows and their projects' rows until
	// commit (the re-judgement before anything is deleted; SQLite serialises writers, so it
	// is members there).
	lockMembers string
	// countAttempts (dry run): 1 tenant, 2 runs -> the attempts they have.
	countAttempts string
	// Deletes of at most 3 rows of the runs' attempts' children (the runs are already
	// deleted; the attempts carry their RunId): 1 tenant, 2 runs, 3 limit.
	deleteCheckpoints string
	deleteCalls       string
	deleteDecisions   string
	deleteDelegations string
	// deleteAttempts: at most 3 attempts of the runs. 1 tenant, 2 runs, 3 limit.
	deleteAttempts string
	// tombstones: a tombstone for every run with an idempotency key that has none yet.
	// 1 tenant, 2 runs, 3 purged at.
	tombstones string
	// deleteRuns: the ended runs among 2. 1 tenant, 2 runs.
	deleteRuns string
	// backlog: records the ended runs among 2 in PurgeBacklog, before deleteRuns deletes
	// them. 1 tenant, 2 runs, 3 purged at.
	backlog string
	// backlogPage: PurgeBacklog rows after (1 tenant, 2 run) in key order ("" and the nil id
	// to start), at most 3. -> TenantId, RunId.
	backlogPage string
	// backlogDone: deletes the backlog rows of the runs. 1 tenant, 2 runs.
	backlogDone string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
