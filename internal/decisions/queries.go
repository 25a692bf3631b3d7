package decisions

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the decision store; each dialect fills every field with
// complete statements taking the numbered arguments listed here. Times are tx.Dialect.Time
// values; a nil keyset position passes NULL for each of its arguments. Statements that
// return decisions read the row's columns (columns) and, except lock, the attempt's run,
// project and agent and the run's subject (sourceColumns).
type queries struct {
	// insert: 1 decision, 2 attempt, 3 tenant, 4 kind, 5 proposal hash, 6 options JSON, 7
	// recommendation, 8 requested at (now), 9 expires at (or NULL), 10 prior phase, 11 run,
	// 12 idempotency key (or NULL), 13 request hash (or NULL).
	insert string
	// byKey: 1 tenant, 2 run, 3 idempotency key -> the decision (as get) and RequestHash.
	byKey string
	// listByRun: 1 tenant, 2 JSON array of run ids, 3 after requested at, 4 after decision, 5
	// limit: the decisions of those runs' attempts in (RequestedAt, DecisionId) order.
	listByRun string
	get       string // 1 tenant, 2 decision
	lock      string // 1 tenant, 2 decision: the decision's own columns, holding the row until commit
	byIDs     string // 1 tenant, 2 JSON array of decision ids
	answer    string // 1 tenant, 2 decision, 3 status, 4 answer JSON, 5 approval id, 6 answered by, 7 now, 8 expected version
	// list: the inbox with an effective status: 1 tenant, 2 status (one of the five), 3 now,
	// 4 project (NULL: any), 5 after requested at, 6 after decision, 7 limit; in
	// (RequestedAt, DecisionId) order.
	list string
	// listPendingFirst: the inbox without a status: 1 tenant, 2 now, 3 project (NULL: any),
	// 4 after rank (NULL: from the start), 5 after requested at, 6 after decision, 7 limit;
	// in (Rank, RequestedAt, DecisionId) order, Rank 0 for a pending decision not past its
	// ExpiresAt, 1 for every other; returns Rank.
	listPendingFirst string
	listByAttempt    string // 1 tenant, 2 attempt, 3 after requested at, 4 after decision, 5 limit
	// newestPrior: 1 tenant, 2 attempt -> PriorPhase of the attempt's newest decision
	// (RequestedAt, then DecisionId, descending); no row when it has none.
	newestPrior string
	// countPending: 1 tenant, 2 attempt, 3 now, 4 cap -> how many of the attempt's decisions
	// are pending and not past their ExpiresAt, counted up to the cap.
	countPending string
	// restorePhase: 1 tenant, 2 attempt, 3 phase, 4 now: sets the phase of a running attempt
	// in awaiting_decision (5) that has no pending decision not past its ExpiresAt at now.
	restorePhase string
	closeForRun  string // 1 tenant, 2 run, 3 now: pending decisions of the run's attempts -> cancelled (expired when past ExpiresAt)
	// due: 1 now, 2 limit -> TenantId, AttemptId of attempts, of any tenant, that have a
	// pending decision past its ExpiresAt (each once).
	due string
	// expireForAttempt: 1 tenant, 2 attempt, 3 now: the attempt's pending decisions past
	// their ExpiresAt -> expired; answers the DecisionId of each.
	expireForAttempt string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

// columns are the decision's own columns, in the order of the row struct, from the
// table aliased d.
const columns = `d.DecisionId, d.AttemptId, d.TenantId, d.Kind, d.ApprovalId, d.ProposalHash, d.OptionsJson,
d.Recommendation, d.Status, d.RequestedAt, d.AnsweredAt, d.AnswerJson, d.AnsweredBy, d.ExpiresAt, d.Version, d.PriorPhase`

// sqliteColumns are columns as SQLite's statements answer them: the times as text, which the
// scan parses (sqldb.ParseTimeText) instead of the driver. Their statements order by d.<time>,
// the table's column, never by the bare name (the text's alias, which no index orders).
const sqliteColumns = `d.DecisionId, d.AttemptId, d.TenantId, d.Kind, d.ApprovalId, d.ProposalHash, d.OptionsJson,
d.Recommendation, d.Status, CAST(d.RequestedAt AS TEXT) AS RequestedAt, CAST(d.AnsweredAt AS TEXT) AS AnsweredAt,
d.AnswerJson, d.AnsweredBy, CAST(d.ExpiresAt AS TEXT) AS ExpiresAt, d.Version, d.PriorPhase`

// sourceColumns are where a decision comes from: its attempt (aliased a) and run (r).
const sourceColumns = `a.RunId, a.ProjectId, a.AgentId, r.Subject`
