package operations

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the bulk operations; each dialect fills every field.
type queries struct {
	// get: 1 tenant, 2 operation -> operationColumns.
	get string
	// byRequest: 1 tenant, 2 request key -> operationColumns (an exact repeat's operation).
	byRequest string
	// insert: 1 tenant, 2 operation, 3 request key, 4 body digest, 5 action, 6 reason, 7
	// matched, 8 now, 9 created by. Running, cursor 0, unleased.
	insert string
	// insertRuns: 1 tenant, 2 operation, 3 first Seq - 1, 4 JSON array of run ids (Seq is the
	// base plus the position).
	insertRuns string
	// pending: 1 now, 2 limit -> TenantId, OperationId of running operations whose lease has
	// passed or was never taken, across tenants (the runners' scan; maintenance scope).
	pending string
	// take: the conditional write that leases an operation. 1 tenant, 2 operation, 3
	// holder, 4 lease until, 5 now. No row: running under another holder's lease, or done.
	take string
	// hold: a batch's first statement, renewing the lease. 1 tenant, 2 operation, 3 holder,
	// 4 the cursor the holder read, 5 lease until. No row: the lease was lost.
	hold string
	// batch: 1 tenant, 2 operation, 3 after Seq, 4 limit -> Seq, RunId in Seq order.
	batch string
	// setResult: 1 tenant, 2 operation, 3 Seq, 4 result.
	setResult string
	// advance: 1 tenant, 2 operation, 3 new cursor, 4 cancelled, 5 cancel requested, 6
	// continued, 7 skipped ended, 8 skipped not ended, 9 skipped exhausted, 10 skipped not
	// found, 12 skipped continued before (each added), 11 finished at (NULL: still running; else the state becomes
	// succeeded and the lease is dropped).
	advance string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
