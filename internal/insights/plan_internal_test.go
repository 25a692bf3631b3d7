package insights

import (
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLitePlans pins the index each direct statement seeks on SQLite (SQL Server's are
// argued in queries_mssql.go): a range of its window, never a scan of a table. The two that
// read ended runs seek the tenant's runs instead, since migration 44 dropped the index of
// their window: they are the tests' reference, and the service reads the roll-ups.
func TestSQLitePlans(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	d := db.Dialect
	from := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	args := []any{"t", d.Time(from), d.Time(from.Add(time.Hour)), int64(300), "release", nil, nil, nil, nil, int64(50), boundsJSON}
	cases := []struct{ name, query, want string }{
		{"runsEnded", sqliteQueries.runsEnded, "SEARCH r USING INDEX IX_Runs_Tenant_Queued (TenantId=?)"},
		{"attemptsPerRun", sqliteQueries.attemptsPerRun, "SEARCH r USING INDEX IX_Runs_Tenant_Queued (TenantId=?)"},
		{"claimLatency", sqliteQueries.claimLatency, "IX_Runs_Tenant_Queued (TenantId=? AND QueuedAt>? AND QueuedAt<?)"},
		{"attemptsEnded", sqliteQueries.attemptsEnded, "IX_Attempts_Tenant_State_Ended (TenantId=? AND State=? AND EndedAt>? AND EndedAt<?)"},
		{"leasesLost", sqliteQueries.leasesLost, "IX_Attempts_Tenant_State_Ended (TenantId=? AND State=? AND EndedAt>? AND EndedAt<?)"},
		{"calls", sqliteQueries.calls, "IX_Calls_Tenant_Started (TenantId=? AND StartedAt>? AND StartedAt<?)"},
		{"decisions", sqliteQueries.decisions, "IX_Decisions_Tenant_Status (TenantId=? AND Status=? AND RequestedAt>? AND RequestedAt<?)"},
	}
	for _, c := range cases {
		plan := strings.Join(dbtest.SQLitePlan(t, db, c.query, args...), "\n")
		if !strings.Contains(plan, c.want) {
			t.Errorf("%s: plan lacks %q:\n%s", c.name, c.want, plan)
		}
		// Per run, its attempts come from IX_Attempts_Run_Step. Without statistics (production
		// runs no ANALYZE) the planner took IX_Attempts_Tenant_Started for the correlated
		// "a.TenantId = r.TenantId" and read every attempt of the tenant for each run.
		if strings.HasPrefix(c.name, "runs") || strings.HasPrefix(c.name, "attemptsPerRun") || c.name == "claimLatency" {
			if !strings.Contains(plan, "SEARCH a USING INDEX IX_Attempts_Run_Step (RunId=?)") ||
				strings.Contains(plan, "SEARCH a USING INDEX IX_Attempts_Tenant_Started (TenantId=?)") {
				t.Errorf("%s: a run's attempts are not sought by the run:\n%s", c.name, plan)
			}
		}
		for _, table := range []string{"SCAN Runs", "SCAN ExecutionAttempts", "SCAN CallRecords", "SCAN DecisionRequests"} {
			if strings.Contains(plan, table+"\n") || strings.HasSuffix(plan, table) {
				t.Errorf("%s: plan scans a table:\n%s", c.name, plan)
			}
		}
	}
}
