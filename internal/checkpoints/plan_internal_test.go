package checkpoints

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestSQLitePlansSeekTheRun pins the plan production gets (nothing runs ANALYZE): a run's
// last checkpoint seeks the run's attempts (IX_Attempts_Run_Step) and each attempt's
// checkpoints, never every attempt of the tenant.
func TestSQLitePlansSeekTheRun(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	plan := strings.Join(dbtest.SQLitePlan(t, db, sqliteQueries.lastOfRun, dbtest.NewTenant(t, db), uuid.New()), "\n")
	for _, w := range []string{"IX_Attempts_Run_Step (RunId=?)", "UX_Checkpoints_Attempt_Sequence (AttemptId=?"} {
		if !strings.Contains(plan, w) {
			t.Errorf("lastOfRun: plan lacks %q:\n%s", w, plan)
		}
	}
}
