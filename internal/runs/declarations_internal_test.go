package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/tdsfake"
)

// The lease: SQL Server's plan cache is keyed by the statement and its declaration list,
// and go-mssqldb declares a plain string nvarchar(its length), so the holder id, which the
// lease only stores, goes as Dialect.Text: two holders of different lengths send one list.
func TestMSSQLLeaseDeclaresOneListForEveryHolder(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: f.DSN("")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, holder := range []string{"h", strings.Repeat("worker-", 15)} {
		// The fake answers no rows: only what was sent matters here.
		_ = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			var run Run
			return tx.GetContext(ctx, &run, mssqlQueries.lease, leaseArgs(tx.Dialect, "tenant-a", uuid.New(), holder, 30, time.Now())...)
		})
	}
	got := f.DeclarationsOf("UPDATE dbo.Runs SET State = 1")
	if len(got) != 2 || got[0] == "" || got[0] != got[1] {
		t.Errorf("declaration lists of two leases: %q; want one list, twice", got)
	}
}
