package dbtest

import (
	"context"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// SQLitePlan returns the detail lines of SQLite's EXPLAIN QUERY PLAN for query with args,
// for the tests that pin which indexes a store's SQLite statements seek (SQL Server's
// plans are argued beside each statement instead).
func SQLitePlan(t testing.TB, db *sqldb.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Raw().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("read the plan of %q: %v", query, err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read the plan of %q: %v", query, err)
	}
	return plan
}
