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
	// insert: the columns of table that have an insert argument, in order (insertArgs: today
	// 1 call, 2 attempt, 3 tenant, 4 sequence, 5 kind, 6 target, 7 request hash, 8 policy
	// decision, 9 started at, 10 model, 11 provider, 12 operation); Status 'started', no
	// receipt, no end -> the call's columns as stored.
	insert string
	// finish: 1 tenant, 2 attempt, 3 call, 4 status, 5 receipt ref (or NULL), 6 ended at,
	// 7 expected version (or NULL: any), 8 response model, 9 finish reasons (JSON), 10 input,
	// 11 output, 12 cache read, 13 cache creation, 14 reasoning tokens, 15 cost micros (each
	// or NULL); changes the row only while it is 'started' (at that version) -> the call's
	// columns as stored; no row when it changed nothing.
	finish string
	// list: 1 tenant, 2 attempt, 3 after sequence, 4 limit -> calls in sequence order.
	list string
	// abandon: 1 tenant, 2 attempt, 3 ended at: every 'started' call of the attempt becomes
	// 'abandoned' with that EndedAt (the attempt has just ended, in this transaction).
	abandon string
	// attemptUsage: 1 tenant, 2 attempt -> usageTotals of the attempt's calls; no row when
	// the attempt is missing or another tenant's. runUsage: 1 tenant, 2 run -> the same over
	// every attempt of the run; no row when the run is missing or another tenant's.
	attemptUsage string
	runUsage     string
	// addCost: 1 tenant, 2 project, 3 day ('YYYY-MM-DD'), 4 cost micros: adds the cost to
	// the project's counter of the day, making the row when missing -> CostMicros (the new
	// total) and DailyCostBudgetMicros (the project's budget, or NULL).
	addCost string
	// listByStarted: the tenant's calls newest start first, (StartedAt, CallId) descending,
	// from StartedAt >= 2 and strictly below the bound (3, 4), seeking
	// IX_Calls_Tenant_Started; listByEnded: the same by EndedAt, seeking
	// IX_Calls_Tenant_Ended. 1 tenant, 2 from, 3 bound time, 4 bound id, 5 limit, 6 target,
	// 7 model, 8 reported usage (1: only calls with a count or cost above zero, 0: any),
	// 9 project, 10 agent, 11 release (the attempt's), 12 run kind; NULL: any.
	listByStarted string
	listByEnded   string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

// columns, cColumns (the table aliased c) and insertedColumns (SQL Server's OUTPUT) list
// table's columns, in the order every statement answers them.
// sqliteColumns and sqliteCColumns are columns and cColumns as SQLite's statements answer
// them, times as text (sqldb.SQLiteColumnList).
var (
	columns         = sqldb.ColumnList(table, "", nil)
	cColumns        = sqldb.ColumnList(table, "c.", nil)
	insertedColumns = sqldb.ColumnList(table, "inserted.", nil)
	sqliteColumns   = sqldb.SQLiteColumnList(table, "", nil)
	sqliteCColumns  = sqldb.SQLiteColumnList(table, "c.", nil)
)

// reportedUsage holds for a call whose finish reported a count or a cost above zero: the
// calls the usage insight counts (both dialects: plain SQL).
const reportedUsage = `(COALESCE(InputTokens, 0) > 0 OR COALESCE(OutputTokens, 0) > 0 OR COALESCE(CacheReadInputTokens, 0) > 0
        OR COALESCE(CacheCreationInputTokens, 0) > 0 OR COALESCE(ReasoningOutputTokens, 0) > 0 OR COALESCE(CostMicros, 0) > 0)`

// usageSums is the totals' select list over calls aliased c (both dialects: plain SQL).
const usageSums = `COUNT(c.CallId) AS Calls,
    COALESCE(SUM(CASE WHEN c.InputTokens IS NULL AND c.OutputTokens IS NULL AND c.CacheReadInputTokens IS NULL
        AND c.CacheCreationInputTokens IS NULL AND c.ReasoningOutputTokens IS NULL AND c.CostMicros IS NULL
        THEN 0 ELSE 1 END), 0) AS Reported,
    COALESCE(SUM(c.InputTokens), 0) AS InputTokens, COALESCE(SUM(c.OutputTokens), 0) AS OutputTokens,
    COALESCE(SUM(c.CacheReadInputTokens), 0) AS CacheReadInputTokens,
    COALESCE(SUM(c.CacheCreationInputTokens), 0) AS CacheCreationInputTokens,
    COALESCE(SUM(c.ReasoningOutputTokens), 0) AS ReasoningOutputTokens, COALESCE(SUM(c.CostMicros), 0) AS CostMicros`
