package decisions

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLitePlans pins how SQLite runs the decision statements (SQL Server's plans are
// argued in queries_mssql.go): every read is driven by a decision index and reaches the
// attempt and the run by primary key, the timeline's read by id seeks the primary key, and
// the expiry reads the filtered pending-expiry index.
func TestSQLitePlans(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	d := db.Dialect
	now := d.Time(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	id := uuid.New()
	list := `["` + uuid.NewString() + `"]`
	joins := []string{"SEARCH a USING INDEX sqlite_autoindex_ExecutionAttempts_1 (AttemptId=?)",
		"SEARCH r USING INDEX sqlite_autoindex_Runs_1 (RunId=?)"}
	cases := []struct {
		name    string
		query   string
		args    []any
		want    []string
		notWant []string
	}{
		{"get", sqliteQueries.get, []any{"t", id},
			append([]string{"SEARCH d USING INDEX sqlite_autoindex_DecisionRequests_1 (DecisionId=?)"}, joins...), []string{"SCAN"}},
		{"byIDs", sqliteQueries.byIDs, []any{"t", list},
			append([]string{"SEARCH d USING INDEX sqlite_autoindex_DecisionRequests_1 (DecisionId=?)"}, joins...),
			[]string{"IX_Decisions_Tenant_Status", "SCAN d"}},
		{"list", sqliteQueries.list, []any{"t", "pending", now, nil, nil, nil, 50, 0, nil, nil, nil, nil, nil},
			append([]string{"SEARCH d USING INDEX IX_Decisions_Tenant_Status (TenantId=?)"}, joins...), []string{"SCAN d"}},
		{"listPendingFirst", sqliteQueries.listPendingFirst, []any{"t", now, nil, nil, nil, nil, 50, nil, nil, nil, "agent-1", nil, nil},
			append([]string{"SEARCH d USING INDEX IX_Decisions_Tenant_Status (TenantId=? AND Status=?)",
				"SEARCH d USING INDEX IX_Decisions_Tenant_Status (TenantId=?)"}, joins...), []string{"SCAN d"}},
		{"listByAttempt", sqliteQueries.listByAttempt, []any{"t", id, nil, nil, 50},
			append([]string{"SEARCH d USING INDEX IX_Decisions_Attempt (AttemptId=?)"}, joins...), nil},
		{"newestPrior", sqliteQueries.newestPrior, []any{"t", id},
			[]string{"SEARCH DecisionRequests USING INDEX IX_Decisions_Attempt (AttemptId=?)"}, nil},
		{"restorePhase", sqliteQueries.restorePhase, []any{"t", id, 2, now},
			[]string{"SEARCH ExecutionAttempts USING INDEX sqlite_autoindex_ExecutionAttempts_1 (AttemptId=?)",
				"SEARCH d USING INDEX IX_Decisions_Attempt (AttemptId=?)"}, []string{"IX_Decisions_Tenant_Status"}},
		{"due", sqliteQueries.due, []any{now, 500},
			[]string{"SEARCH DecisionRequests USING INDEX IX_Decisions_PendingExpiry (ExpiresAt>? AND ExpiresAt<?)"}, []string{"SCAN DecisionRequests"}},
		{"expireForAttempt", sqliteQueries.expireForAttempt, []any{"t", id, now},
			[]string{"SEARCH DecisionRequests USING INDEX IX_Decisions_Attempt (AttemptId=?)"}, []string{"IX_Decisions_Tenant_Status"}},
		// Every run's end runs it: the tenant's status index would read every pending
		// decision of the tenant (the planner has no statistics in production).
		{"closeForRun", sqliteQueries.closeForRun, []any{"t", id, now},
			[]string{"SEARCH a USING INDEX IX_Attempts_Run_Step (RunId=?)",
				"SEARCH DecisionRequests USING INDEX IX_Decisions_Attempt (AttemptId=?)"}, []string{"IX_Decisions_Tenant_Status"}},
		{"byKey", sqliteQueries.byKey, []any{"t", id, "k"},
			append([]string{"SEARCH d USING INDEX UX_Decisions_Idempotency (TenantId=? AND RunId=? AND IdempotencyKey=?)"}, joins...), nil},
		{"listByRun", sqliteQueries.listByRun, []any{"t", list, nil, nil, 50},
			[]string{"SEARCH a USING INDEX IX_Attempts_Run_Step (RunId=?)", "SEARCH d USING INDEX IX_Decisions_Attempt (AttemptId=?)"},
			[]string{"IX_Decisions_Tenant_Status", "SCAN d"}},
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
		for _, w := range c.notWant {
			if strings.Contains(text, w) {
				t.Errorf("%s: plan has %q:\n%s", c.name, w, text)
			}
		}
	}
}
