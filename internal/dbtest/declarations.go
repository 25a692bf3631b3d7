package dbtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/tdsfake"
)

// DeclaresOneList checks a hot statement against SQL Server's plan cache, which is keyed by
// the statement and its declaration list: go-mssqldb declares a plain string as
// nvarchar(its length), so text a statement only stores must go as Dialect.Text. send sends
// the statement once with text in every free-text argument; it runs twice, with a short and
// a long text, against a fake TDS server, and the two sends of the statement that starts
// with prefix must carry one declaration list. The fake answers no rows, so send's error
// (often ErrNotFound) is ignored: only what was sent matters.
func DeclaresOneList(t *testing.T, prefix string, send func(ctx context.Context, tx *sqldb.Tx, text string) error) {
	t.Helper()
	f := tdsfake.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: f.DSN("")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, text := range []string{"a", strings.Repeat("long text ", 40)} {
		_ = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error { return send(ctx, tx, text) })
	}
	if got := f.DeclarationsOf(prefix); len(got) != 2 || got[0] == "" || got[0] != got[1] {
		t.Errorf("declaration lists of two sends of %q: %q; want one list, twice", prefix, got)
	}
}
