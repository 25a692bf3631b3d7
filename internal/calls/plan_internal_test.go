package calls

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestSQLitePlansSeekTheAttempt: the statements that take an attempt's calls seek
// UX_Calls_Attempt_Sequence. With IX_Calls_Tenant_Started (TenantId, StartedAt, migration
// 18) beside it, SQLite's planner, which has no statistics in production (nothing runs
// ANALYZE), took the tenant's index for "TenantId = ? AND AttemptId = ?" and read every call
// of the tenant: the abandon hook runs in every attempt's end, so a complete cost a scan of
// the tenant's calls (69 % of the server's CPU in a cycle after 5 s of appends).
func TestSQLitePlansSeekTheAttempt(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	tenant, attempt := dbtest.NewTenant(t, db), uuid.New()
	now := db.Dialect.Time(time.Now())
	for name, c := range map[string]struct {
		query string
		args  []any
	}{
		"abandon": {sqliteQueries.abandon, []any{tenant, attempt, now}},
		"list":    {sqliteQueries.list, []any{tenant, attempt, 0, 10}},
	} {
		plan := strings.Join(dbtest.SQLitePlan(t, db, c.query, c.args...), "\n")
		t.Logf("%s:\n%s", name, plan)
		if !strings.Contains(plan, "UX_Calls_Attempt_Sequence (AttemptId=?") || strings.Contains(plan, "IX_Calls_Tenant_Started") {
			t.Errorf("%s does not seek UX_Calls_Attempt_Sequence by the attempt:\n%s", name, plan)
		}
	}
}

// TestSQLitePlansOfTheTenantListings: a page of the tenant's calls is a range of its time
// index read from the bound (no scan of the table) in the index's order, by start or by end.
func TestSQLitePlansOfTheTenantListings(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	d := db.Dialect
	for name, c := range map[string]struct{ query, want string }{
		"listByStarted": {sqliteQueries.listByStarted, "IX_Calls_Tenant_Started (TenantId=? AND StartedAt>? AND StartedAt<?)"},
		"listByEnded":   {sqliteQueries.listByEnded, "IX_Calls_Tenant_Ended (TenantId=? AND EndedAt>? AND EndedAt<?)"},
	} {
		plan := strings.Join(dbtest.SQLitePlan(t, db, c.query, "t", d.Time(sqldb.KeyMinTime), d.Time(sqldb.KeyMaxTime), sqldb.KeyMaxID, 50,
			nil, nil, 1, nil, "agent-1", nil, "review", 0, "[]", `["x"]`), "\n")
		t.Logf("%s:\n%s", name, plan)
		// A whole sort would mean the order is the answered text's (the time's alias), not the index's
		// (ties of one time are sorted by id, as before).
		if !strings.Contains(plan, c.want) || strings.Contains(plan, "SCAN CallRecords") || strings.Contains(plan, "USE TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s does not read a range of its index in its order:\n%s", name, plan)
		}
	}
}
