package sqldb

import (
	"reflect"
	"strings"
	"testing"
)

// TestScopeTravelsWithTheFirstStatement: a TenantScopeInFirstRoundTrip scope is put in
// front of the transaction's first statement only, as SQL Server's session-context
// statement with its parameters numbered after the statement's own, so neither's
// parameters move; the values are the tenant and a bypass of 0, as SetScope sends them.
func TestScopeTravelsWithTheFirstStatement(t *testing.T) {
	s := TenantScopeInFirstRoundTrip("tenant-a")
	tx := &Tx{scope: func(n int) (string, []any) { return mssqlDialect{}.scopePrefix(s, n) }}
	query, args := tx.withScope("SELECT @p1, @p2;", []any{"x", 7})
	if !strings.HasSuffix(query, "\nSELECT @p1, @p2;") || !strings.Contains(query, "@value = @p3;") ||
		!strings.Contains(query, "@value = @p4;") || strings.Contains(query, "@value = @p1") {
		t.Fatalf("prefixed statement:\n%s", query)
	}
	if want := []any{"x", 7, "tenant-a", 0}; !reflect.DeepEqual(args, want) {
		t.Fatalf("args %v, want %v", args, want)
	}
	if q, a := tx.withScope("SELECT 1;", nil); q != "SELECT 1;" || len(a) != 0 {
		t.Fatalf("the second statement was changed too: %q %v", q, a)
	}
	if p, ok := Dialect(sqliteDialect{}).(scopePrefixer); ok {
		t.Fatalf("SQLite has no scope to send, yet prefixes %v", p)
	}
}
