package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLiteLostSeeksTheHour: "leases lost in the last hour" seeks the lost attempts of the
// tenant from the hour's start (migration 000017's index), not every lost attempt kept.
func TestSQLiteLostSeeksTheHour(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	plan := strings.Join(dbtest.SQLitePlan(t, db, sqliteQueries.lost, "t", db.Dialect.Time(time.Now())), "\n")
	if want := "IX_Attempts_Tenant_State_Ended (TenantId=? AND State=? AND EndedAt>?)"; !strings.Contains(plan, want) {
		t.Errorf("plan lacks %q:\n%s", want, plan)
	}
}
