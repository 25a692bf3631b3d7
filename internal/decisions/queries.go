package decisions

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the decision store; each dialect fills every field with
// complete statements taking the numbered arguments listed here. Times are tx.Dialect.Time values;
// a nil keyset position passes NULL for both of its arguments.
type queries struct {
	insert          string // 1 decision, 2 attempt, 3 tenant, 4 kind, 5 proposal hash, 6 options JSON, 7 recommendation, 8 requested at (now), 9 expires at (or NULL)
	get             string // 1 tenant, 2 decision
	lock            string // 1 tenant, 2 decision: get, holding the row until commit
	answer          string // 1 tenant, 2 decision, 3 status, 4 answer JSON, 5 approval id, 6 answered by, 7 now, 8 expected version
	list            string // 1 tenant, 2 effective status (NULL: all), 3 now, 4 after requested at, 5 after decision, 6 limit
	listByAttempt   string // 1 tenant, 2 attempt, 3 after requested at, 4 after decision, 5 limit
	closeForAttempt string // 1 tenant, 2 attempt, 3 now: pending -> cancelled (expired when past ExpiresAt)
	expire          string // 1 now, 2 batch size: pending past ExpiresAt -> expired, any tenant
}

func queriesFor(d sqldb.Dialect) *queries {
	if d.Name() == "sqlserver" {
		return &mssqlQueries
	}
	return &sqliteQueries
}

// columns are read by every SELECT, in the order of the row struct.
const columns = `DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson, Recommendation, Status,
RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt, Version`
