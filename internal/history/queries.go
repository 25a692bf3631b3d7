package history

import (
	"regexp"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// queries is the statement set of the history reads; each dialect fills every field with
// complete statements taking the numbered arguments listed here.
type queries struct {
	// listByTenant: newest first, (StartedAt, AttemptId) descending, from StartedAt >= 5
	// and strictly below the bound (6, 7), seeking IX_Attempts_Tenant_Started. The bound is
	// one keyset: the cursor, or startedTo with the smallest id (minID) when that is lower,
	// or maxTime and maxID; one bound gives the index one range to seek (SQLite would seek
	// only one of two upper bounds and filter the other, so a deep page would read every
	// row above it). 1 tenant, 2 state or NULL, 3 agent or NULL, 4 project or NULL, 5 started
	// from, 6 bound time, 7 bound id, 8 limit, 9 release or NULL, 10 run kind or NULL, 11 error
	// code or NULL.
	listByTenant string
	// listByRun: the same page of one run's attempts, seeking IX_Attempts_Run_Step. 1 tenant,
	// 2 run, 3 state or NULL, 4 agent or NULL, 5 project or NULL, 6 from, 7 bound time,
	// 8 bound id, 9 limit, 10 release or NULL, 11 run kind or NULL, 12 error code or NULL.
	listByRun string
	// listByEnded: the attempts ended in a window, newest end first, (EndedAt, AttemptId)
	// descending, from EndedAt >= 5 and strictly below the bound (6, 7): one branch per
	// ended state, each a page of IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt)
	// in index order, merged and cut to a page, so a page reads at most six pages whatever
	// the window holds. State NULL takes the states the attempts-ended insight counts (1..5);
	// parked (6) only when asked for. Arguments as listByTenant's (2 state, 3 agent,
	// 4 project, 9 release, 10 run kind, 11 error code).
	listByEnded string
	// changesCap -> one RowVersion: rows with a Version below it are committed and visible
	// to the statements after it (no arguments).
	changesCap string
	// changes: Version order, keyset (Version, AttemptId) strictly after (2, 3), below the
	// cap (4), seeking IX_Attempts_Tenant_Version. 1 tenant, 2 version, 3 attempt (maxID to
	// start strictly after the version), 4 cap, 5 limit.
	changes string
	// timeline: the keys of one attempt's entries in timeline order (At, Kind, Seq, Id)
	// strictly after the cursor, one UNION ALL branch per table, each seeking its AttemptId
	// index. 1 tenant, 2 attempt, 3 cursor at, 4 cursor kind (-1 to start), 5 cursor
	// sequence (0 for kinds without one), 6 cursor id, 7 limit -> Kind, At, Seq, Id.
	timeline string
	// TimelineEntry rows by id: 1 tenant, 2 JSON array of ids (decisions are read by
	// decisions.ByIDs).
	checkpoints string
	calls       string
	delegations string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

const checkpointColumns = `CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion,
ContextSnapshotRef, Hash, CreatedAt`

const callColumns = `CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, PolicyDecisionId, ReceiptRef,
Status, StartedAt, EndedAt, Version`

const delegationColumns = `DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth, Status,
CreatedAt, Version`

// The attempt's columns are attempts.Columns and attempts.SQLiteColumns. The same lists as SQLite's statements answer them: each time column as text, which the
// scan parses (sqldb.ParseTimeText) instead of the driver. A statement that orders by one
// of them names the column with its table: the bare name is the text's alias there, which
// no index orders.
var (
	sqliteCheckpointColumns = sqliteTimes(checkpointColumns, "CreatedAt")
	sqliteCallColumns       = sqliteTimes(callColumns, "StartedAt", "EndedAt")
	sqliteDelegationColumns = sqliteTimes(delegationColumns, "CreatedAt")
)

// sqliteTimes is the column list cols with each of times answered as text.
func sqliteTimes(cols string, times ...string) string {
	for _, t := range times {
		re := regexp.MustCompile(`\b` + t + `\b`)
		if len(re.FindAllStringIndex(cols, -1)) != 1 {
			panic("history: " + t + " is not once in " + cols)
		}
		cols = re.ReplaceAllString(cols, sqldb.SQLiteTimeText("DATETIME", t, t))
	}
	return cols
}
