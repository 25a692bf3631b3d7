package calls

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the call store; each dialect fills every field with a
// complete statement taking the numbered arguments listed here. Sequence and Kind
// arguments are int32 (the seed's int), so SQL Server compares them without converting
// the column.
type queries struct {
	// bySequence: 1 tenant, 2 attempt, 3 sequence -> the call's columns and AttemptToken
	// (the attempt's FencingToken); no row when either is missing or another tenant's.
	bySequence string
	// byID: 1 tenant, 2 attempt, 3 call -> the call's columns and AttemptToken.
	byID string
	// insert: 1 call, 2 attempt, 3 tenant, 4 sequence, 5 kind, 6 target, 7 request hash,
	// 8 policy decision (or NULL), 9 started at; Status 'started', no receipt, no end ->
	// the call's columns as stored.
	insert string
	// finish: 1 tenant, 2 attempt, 3 call, 4 status, 5 receipt ref (or NULL), 6 ended at,
	// 7 expected version (or NULL: any); changes the row only while it is 'started' (at
	// that version) -> the call's columns as stored; no row when it changed nothing.
	finish string
	// list: 1 tenant, 2 attempt, 3 after sequence, 4 limit -> calls in sequence order.
	list string
	// abandon: 1 tenant, 2 attempt, 3 ended at: every 'started' call of the attempt becomes
	// 'abandoned' with that EndedAt (the attempt has just ended, in this transaction).
	abandon string
}

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &mssqlQueries, &sqliteQueries) }

const columns = `CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, PolicyDecisionId, ReceiptRef, Status,
StartedAt, EndedAt, Version`

// cColumns are columns for a statement where the table is aliased c.
const cColumns = `c.CallId, c.AttemptId, c.TenantId, c.Sequence, c.Kind, c.Target, c.RequestHash, c.PolicyDecisionId,
c.ReceiptRef, c.Status, c.StartedAt, c.EndedAt, c.Version`
