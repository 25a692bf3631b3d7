package delegations

import (
	"strings"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// queries is the statement set of the delegation store; each dialect fills every field with
// complete statements taking the numbered arguments listed here. Times are tx.Dialect.Time values;
// a nil keyset position passes NULL for both of its arguments.
type queries struct {
	insert        string // 1 delegation, 2 attempt, 3 tenant, 4 child run, 5 child agent, 6 purpose, 7 depth, 8 status, 9 created at (now) -> the delegation as stored
	get           string // 1 tenant, 2 delegation
	byChildRun    string // 1 tenant, 2 child run
	listByAttempt string // 1 tenant, 2 attempt, 3 after created at, 4 after delegation, 5 limit
	// listByRun: every attempt's delegations of one run, in (CreatedAt, DelegationId) order,
	// at most 3 rows: 1 tenant, 2 run, 3 limit.
	listByRun string
	setStatus string // 1 tenant, 2 delegation, 3 status: changes the row only when the status differs

	// Reads of the Runs table (the run-lease core is its only writer; these only read).
	runByIdempotencyKey string // 1 tenant, 2 idempotency key -> RunId
	continuedFrom       string // 1 tenant, 2 run -> ContinuedFromRunId (NULL for a chain's first run)
	// delegatedSiblings: 1 tenant, 2 parent run, 3 subject -> DelegationId, ChildRunId,
	// Status of every delegation an attempt of the parent run made whose child run has the
	// subject (the chains a continuation with that parent and subject may belong to).
	delegatedSiblings string
}

// prefixed is the column list with each column qualified by alias (a join's).
func prefixed(alias string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

// columns are read by every SELECT of a delegation, in the order of Delegation.
const columns = `DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth, Status, CreatedAt, Version`
