package history

import (
	"fmt"
	"strings"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite pins the index of each page with INDEXED BY: the optional filters are catch-all
// predicates ("?2 IS NULL OR State = ?2") the planner cannot weigh, and a page must walk
// its index in order (no sort, cost independent of depth). Row values compare keysets as
// one range bound of the index. Statements run on the reader pool inside one deferred
// transaction, so the cap and the page see the same snapshot.
// sqliteInsightFilters are the release, run kind, error code and error presence filters
// (argument numbers release, kind, code, hasError) and the five not* lists (JSON arrays,
// '[]' for none, from argument number not: project, agent, run kind, release, error code;
// an attempt without an error is kept, as its "(none)" group is the insight's own); the
// kind reads the attempt's run by primary key only when asked.
func sqliteInsightFilters(release, kind, code, hasError, not int) string {
	return fmt.Sprintf(`(?%[1]d IS NULL OR ReleaseId = ?%[1]d) AND (?%[3]d IS NULL OR ErrorCode = ?%[3]d)
    AND (?%[4]d IS NULL OR (?%[4]d = 1 AND ErrorCode IS NOT NULL) OR (?%[4]d = 0 AND ErrorCode IS NULL))
    AND (?%[2]d IS NULL OR EXISTS (SELECT 1 FROM Runs AS r WHERE r.RunId = ExecutionAttempts.RunId AND +r.TenantId = ?1 AND r.Kind = ?%[2]d))
    AND (?%[5]d = '[]' OR ProjectId NOT IN (SELECT value FROM json_each(?%[5]d)))
    AND (?%[6]d = '[]' OR AgentId NOT IN (SELECT value FROM json_each(?%[6]d)))
    AND (?%[7]d = '[]' OR NOT EXISTS (SELECT 1 FROM Runs AS r WHERE r.RunId = ExecutionAttempts.RunId AND +r.TenantId = ?1
        AND r.Kind IN (SELECT value FROM json_each(?%[7]d))))
    AND (?%[8]d = '[]' OR ReleaseId NOT IN (SELECT value FROM json_each(?%[8]d)))
    AND (?%[9]d = '[]' OR COALESCE(ErrorCode, '') NOT IN (SELECT value FROM json_each(?%[9]d)))`,
		release, kind, code, hasError, not, not+1, not+2, not+3, not+4)
}

// sqliteListByEnded: per ended state a page of IX_Attempts_Tenant_State_Ended read
// backwards from the bound (the row value compares (EndedAt, AttemptId), the index range is
// on EndedAt; rows of one EndedAt are sorted by id, a few), then the merge of at most six
// pages cut to one.
func sqliteListByEnded() string {
	var b strings.Builder
	for i, st := range []int{1, 2, 3, 4, 5, 6} {
		if i > 0 {
			b.WriteString("\n    UNION ALL\n")
		}
		which := fmt.Sprintf("(?2 IS NULL OR ?2 = %d)", st)
		if st == 6 {
			which = "?2 = 6" // parked: only when asked for, as the insight does not count it
		}
		fmt.Fprintf(&b, `    SELECT * FROM (SELECT `+attempts.SQLiteColumns+`
    FROM ExecutionAttempts INDEXED BY IX_Attempts_Tenant_State_Ended
    WHERE TenantId = ?1 AND State = %d AND %s AND EndedAt >= ?5 AND (EndedAt, AttemptId) < (?6, ?7)
        AND (?3 IS NULL OR AgentId = ?3) AND (?4 IS NULL OR ProjectId = ?4) AND `+sqliteInsightFilters(9, 10, 11, 12, 13)+`
    ORDER BY ExecutionAttempts.EndedAt DESC, AttemptId DESC LIMIT ?8)`, st, which)
	}
	return `SELECT ` + attempts.Columns + ` FROM (
` + b.String() + `
)
ORDER BY EndedAt DESC, AttemptId DESC LIMIT ?8`
}

var sqliteQueries = queries{
	listByTenant: `SELECT ` + attempts.SQLiteColumns + `
FROM ExecutionAttempts INDEXED BY IX_Attempts_Tenant_Started
WHERE TenantId = ?1 AND StartedAt >= ?5 AND (StartedAt, AttemptId) < (?6, ?7)
    AND (?2 IS NULL OR State = ?2) AND (?3 IS NULL OR AgentId = ?3) AND (?4 IS NULL OR ProjectId = ?4)
    AND ` + sqliteInsightFilters(9, 10, 11, 12, 13) + `
ORDER BY ExecutionAttempts.StartedAt DESC, AttemptId DESC LIMIT ?8`,

	listByRun: `SELECT ` + attempts.SQLiteColumns + `
FROM ExecutionAttempts INDEXED BY IX_Attempts_Run_Step
WHERE RunId = ?2 AND TenantId = ?1 AND StartedAt >= ?6 AND (StartedAt, AttemptId) < (?7, ?8)
    AND (?3 IS NULL OR State = ?3) AND (?4 IS NULL OR AgentId = ?4) AND (?5 IS NULL OR ProjectId = ?5)
    AND ` + sqliteInsightFilters(10, 11, 12, 13, 14) + `
ORDER BY ExecutionAttempts.StartedAt DESC, AttemptId DESC LIMIT ?9`,

	listByEnded: sqliteListByEnded(),

	// Writers are serialised and a reader sees one snapshot, so every stamped row is
	// committed: the cap is just past the counter.
	changesCap: `SELECT Value + 1 FROM RowVersionCounter WHERE Id = 1`,

	// One statement stamps one Version on every row it writes, so Version alone is not a
	// key: the keyset is (Version, AttemptId).
	changes: `SELECT ` + attempts.SQLiteColumns + `
FROM ExecutionAttempts INDEXED BY IX_Attempts_Tenant_Version
WHERE TenantId = ?1 AND (Version, AttemptId) > (?2, ?3) AND Version < ?4
ORDER BY Version, AttemptId LIMIT ?5`,

	// Each branch takes at most a page in its own order before the merge sorts at most four
	// pages: the decision and delegation branches walk their (AttemptId, time) index and
	// stop; checkpoints and calls have no such index, so their branches read the attempt's
	// rows of that table and keep the first page (a bounded sorter). (AttemptId, Sequence) is
	// unique, so (time, Sequence) already orders those two branches totally; leaving the id
	// out of their ORDER BY lets an (AttemptId, time, Sequence) index, if one is added, feed
	// the branch in order and stop after a page.
	// Every branch answers its time as text (a compound's column takes its declared type
	// from one of them, the last in this SQLite), so the driver leaves every row's At alone.
	timeline: `SELECT Kind, At, Seq, Id FROM (
    SELECT * FROM (SELECT 0 AS Kind, CAST(CreatedAt AS TEXT) AS At, Sequence AS Seq, CheckpointId AS Id FROM Checkpoints
        WHERE AttemptId = ?2 AND +TenantId = ?1 AND CreatedAt >= ?3 AND (CreatedAt, 0, Sequence, CheckpointId) > (?3, ?4, ?5, ?6)
        ORDER BY CreatedAt, Sequence LIMIT ?7)
    UNION ALL
    SELECT * FROM (SELECT 1, CAST(StartedAt AS TEXT), Sequence, CallId FROM CallRecords
        WHERE AttemptId = ?2 AND +TenantId = ?1 AND StartedAt >= ?3 AND (StartedAt, 1, Sequence, CallId) > (?3, ?4, ?5, ?6)
        ORDER BY StartedAt, Sequence LIMIT ?7)
    UNION ALL
    SELECT * FROM (SELECT 2, CAST(RequestedAt AS TEXT), 0, DecisionId FROM DecisionRequests
        WHERE AttemptId = ?2 AND +TenantId = ?1 AND RequestedAt >= ?3 AND (RequestedAt, 2, 0, DecisionId) > (?3, ?4, ?5, ?6)
        ORDER BY RequestedAt, DecisionId LIMIT ?7)
    UNION ALL
    SELECT * FROM (SELECT 3, CAST(CreatedAt AS TEXT), 0, DelegationId FROM SubAgentDelegations
        WHERE AttemptId = ?2 AND +TenantId = ?1 AND CreatedAt >= ?3 AND (CreatedAt, 3, 0, DelegationId) > (?3, ?4, ?5, ?6)
        ORDER BY CreatedAt, DelegationId LIMIT ?7)
)
ORDER BY At, Kind, Seq, Id LIMIT ?7`,

	// Rows named by a JSON list of ids: "+TenantId" keeps the planner off TenantId indexes
	// (IX_Decisions_Tenant_Status would otherwise be read whole), so the list drives
	// primary-key seeks and TenantId is checked per row.
	checkpoints: `SELECT ` + sqliteCheckpointColumns + ` FROM Checkpoints
WHERE CheckpointId IN (SELECT value FROM json_each(?2)) AND +TenantId = ?1`,
	calls: `SELECT ` + sqliteCallColumns + ` FROM CallRecords
WHERE CallId IN (SELECT value FROM json_each(?2)) AND +TenantId = ?1`,
	delegations: `SELECT ` + sqliteDelegationColumns + ` FROM SubAgentDelegations
WHERE DelegationId IN (SELECT value FROM json_each(?2)) AND +TenantId = ?1`,
}
