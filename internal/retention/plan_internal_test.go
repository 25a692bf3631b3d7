package retention

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLitePlans pins how SQLite runs the purge's statements (SQL Server's are argued in
// queries_mssql.go): statements that name rows by a JSON list of ids seek those ids, and
// never read a tenant's rows through a TenantId index (which without statistics SQLite
// would otherwise choose, making every batch read the whole tenant).
func TestSQLitePlans(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	d := db.Dialect
	list := `["` + uuid.NewString() + `","` + uuid.NewString() + `"]`
	now := time.Now()
	q := sqliteQueries
	cases := []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"tenants", q.tenants, []any{"", 100}, []string{"sqlite_autoindex_Projects_1 (TenantId>?)"}},
		{"roots", q.roots, []any{"t", d.Time(now), d.Time(now), d.Time(now), uuid.Nil, 500},
			[]string{"IX_Runs_Tenant_Queued (TenantId=? AND (QueuedAt,RunId)>(?,?) AND QueuedAt<?)", "sqlite_autoindex_Projects_1"}},
		{"members", q.members, []any{"t", list},
			[]string{"sqlite_autoindex_Runs_1 (RunId=?)", "UX_Runs_ContinuedFrom (ContinuedFromRunId=?)", "IX_Runs_Parent (ParentRunId=?)"}},
		{"countAttempts", q.countAttempts, []any{"t", list}, []string{"IX_Attempts_Run_Step (RunId=?)"}},
		{"deleteCheckpoints", q.deleteCheckpoints, []any{"t", list, 10},
			[]string{"IX_Attempts_Run_Step (RunId=?)", "UX_Checkpoints_Attempt_Sequence (AttemptId=?)"}},
		{"deleteCalls", q.deleteCalls, []any{"t", list, 10},
			[]string{"IX_Attempts_Run_Step (RunId=?)", "UX_Calls_Attempt_Sequence (AttemptId=?)"}},
		{"deleteDecisions", q.deleteDecisions, []any{"t", list, 10},
			[]string{"IX_Attempts_Run_Step (RunId=?)", "IX_Decisions_Attempt (AttemptId=?)"}},
		{"deleteDelegations", q.deleteDelegations, []any{"t", list, 10},
			[]string{"IX_Attempts_Run_Step (RunId=?)", "IX_Delegations_Attempt (AttemptId=?)"}},
		{"deleteAttempts", q.deleteAttempts, []any{"t", list, 10}, []string{"IX_Attempts_Run_Step (RunId=?)"}},
		{"tombstones", q.tombstones, []any{"t", list, d.Time(now)},
			[]string{"sqlite_autoindex_Runs_1 (RunId=?)", "sqlite_autoindex_IdempotencyTombstones_1 (TenantId=? AND IdempotencyKey=?)"}},
		{"deleteRuns", q.deleteRuns, []any{"t", list}, []string{"sqlite_autoindex_Runs_1 (RunId=?)"}},
		{"backlog", q.backlog, []any{"t", list, d.Time(now)}, []string{"sqlite_autoindex_Runs_1 (RunId=?)"}},
		{"backlogPage", q.backlogPage, []any{"", uuid.Nil, 500}, []string{"sqlite_autoindex_PurgeBacklog_1 ((TenantId,RunId)>(?,?))"}},
		{"backlogDone", q.backlogDone, []any{"t", list}, []string{"sqlite_autoindex_PurgeBacklog_1 (TenantId=? AND RunId=?)"}},
	}
	for _, c := range cases {
		plan := dbtest.SQLitePlan(t, db, c.query, c.args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", c.name, text)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, w, text)
			}
		}
		for _, bad := range []string{"SCAN Runs", "SCAN ExecutionAttempts", "SCAN Checkpoints", "SCAN CallRecords",
			"SCAN DecisionRequests", "SCAN SubAgentDelegations"} {
			if strings.Contains(text, bad+"\n") || strings.HasSuffix(text, bad) || strings.Contains(text, bad+" ") {
				t.Errorf("%s: plan scans a table (%q):\n%s", c.name, bad, text)
			}
		}
		for _, tenantIndex := range []string{"IX_Runs_Tenant_Queued", "IX_Attempts_Tenant_", "IX_Decisions_Tenant_Status"} {
			if c.name != "roots" && strings.Contains(text, tenantIndex) {
				t.Errorf("%s: plan reads the tenant through %s instead of seeking the listed ids:\n%s", c.name, tenantIndex, text)
			}
		}
	}
}
