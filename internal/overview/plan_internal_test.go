package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLiteLostSeeksTheHour: "leases lost in the last hour" seeks the lost attempts of the
// tenant from the hour's start (migration 000018's index), not every lost attempt kept.
func TestSQLiteLostSeeksTheHour(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	plan := strings.Join(dbtest.SQLitePlan(t, db, sqliteQueries.lost, "t", db.Dialect.Time(time.Now())), "\n")
	if want := "IX_Attempts_Tenant_State_Ended (TenantId=? AND State=? AND EndedAt>?)"; !strings.Contains(plan, want) {
		t.Errorf("plan lacks %q:\n%s", want, plan)
	}
}

// TestSQLiteRunCountsSeekTheirState: the console's queued and leased counts read only the
// tenant's queued (or leased) runs, never IX_Runs_Tenant_Queued's every run of the tenant.
func TestSQLiteRunCountsSeekTheirState(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	now := db.Dialect.Time(time.Now())
	for _, c := range []struct {
		name, query, want string
		args              []any
	}{
		{"queued", sqliteQueries.queued, "IX_Runs_SubjectQueue (TenantId=?)", []any{"t", now}},
		{"leased", sqliteQueries.leased, "UX_Runs_LeasedSubject (TenantId=?)", []any{"t"}},
	} {
		plan := strings.Join(dbtest.SQLitePlan(t, db, c.query, c.args...), "\n")
		if !strings.Contains(plan, c.want) || strings.Contains(plan, "IX_Runs_Tenant_Queued") {
			t.Errorf("%s: plan lacks %q:\n%s", c.name, c.want, plan)
		}
	}
}
