package history

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestSQLitePlans pins how SQLite runs each page (SQL Server's plans are argued in
// queries_mssql.go): the listings walk their index in order with no sort, so a page costs
// the same at any depth, and the timeline seeks each table by AttemptId.
func TestSQLitePlans(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	id := uuid.New()
	d := db.Dialect
	list := `["` + uuid.NewString() + `"]`
	cases := []struct {
		name    string
		query   string
		args    []any
		want    []string
		notWant []string
	}{
		{"listByTenant", sqliteQueries.listByTenant,
			[]any{"t", nil, nil, nil, d.Time(sqldb.KeyMinTime), d.Time(sqldb.KeyMaxTime), sqldb.KeyMaxID, 50, nil, "review", nil, 0,
				"[]", "[]", "[]", "[]", "[]"},
			[]string{"IX_Attempts_Tenant_Started (TenantId=? AND StartedAt>? AND (StartedAt,AttemptId)<(?,?))",
				"SEARCH r USING INDEX sqlite_autoindex_Runs_1 (RunId=?)"}, []string{"TEMP B-TREE"}},
		{"listByRun", sqliteQueries.listByRun,
			[]any{"t", id, nil, nil, nil, d.Time(sqldb.KeyMinTime), d.Time(sqldb.KeyMaxTime), sqldb.KeyMaxID, 50, nil, nil, nil, nil,
				"[]", "[]", "[]", "[]", "[]"},
			[]string{"IX_Attempts_Run_Step (RunId=?)"}, nil},
		// Each ended state's branch is a range of the index cut to a page (rows of one EndedAt
		// sorted by id), and the six pages are merged: no branch reads past its page.
		{"listByEnded", sqliteQueries.listByEnded,
			[]any{"t", nil, nil, nil, d.Time(sqldb.KeyMinTime), d.Time(sqldb.KeyMaxTime), sqldb.KeyMaxID, 50, nil, nil, nil, 1,
				"[]", "[]", "[]", "[]", "[]"},
			[]string{"IX_Attempts_Tenant_State_Ended (TenantId=? AND State=? AND EndedAt>? AND EndedAt<?)"},
			[]string{"SCAN ExecutionAttempts"}},
		{"changes", sqliteQueries.changes,
			[]any{"t", int64(0), sqldb.KeyMaxID, int64(1 << 40), 50},
			[]string{"IX_Attempts_Tenant_Version (TenantId=? AND (Version,AttemptId)>(?,?) AND Version<?)"}, []string{"TEMP B-TREE"}},
		{"timeline", sqliteQueries.timeline,
			[]any{"t", id, d.Time(sqldb.KeyMinTime), -1, 0, uuid.Nil, 50},
			[]string{"UX_Checkpoints_Attempt_Sequence (AttemptId=?)", "UX_Calls_Attempt_Sequence (AttemptId=?)",
				"IX_Decisions_Attempt (AttemptId=?", "IX_Delegations_Attempt (AttemptId=?"},
			[]string{"SCAN Checkpoints", "SCAN CallRecords", "IX_Decisions_Tenant_Status"}},
		{"checkpoints", sqliteQueries.checkpoints, []any{"t", list}, []string{"sqlite_autoindex_Checkpoints_1 (CheckpointId=?)"}, nil},
		{"calls", sqliteQueries.calls, []any{"t", list}, []string{"sqlite_autoindex_CallRecords_1 (CallId=?)"}, nil},
		{"delegations", sqliteQueries.delegations, []any{"t", list}, []string{"sqlite_autoindex_SubAgentDelegations_1 (DelegationId=?)"}, nil},
	}
	sorts := map[string]int{"listByRun": 1, "listByEnded": 6, "timeline": 3}
	for _, c := range cases {
		plan := dbtest.SQLitePlan(t, db, c.query, c.args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", c.name, text)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, w, text)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(text, w) {
				t.Errorf("%s: plan has %q:\n%s", c.name, w, text)
			}
		}
		// The pages answer their times as text under the columns' names and order by the
		// table's column: ordering by the text (the bare name) would sort where the index
		// orders, one more whole sort per branch.
		if n := strings.Count(text, "USE TEMP B-TREE FOR ORDER BY"); n != sorts[c.name] {
			t.Errorf("%s: %d whole sorts, want %d:\n%s", c.name, n, sorts[c.name], text)
		}
	}
}
