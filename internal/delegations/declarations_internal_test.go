package delegations

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/runs"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/tdsfake"
)

// The delegation insert: SQL Server's plan cache is keyed by the statement and its declaration list, and
// go-mssqldb declares a plain string nvarchar(its length), so the text it only stores goes
// as Dialect.Text: two calls whose text differs in length send one declaration list.
func TestMSSQLDelegationInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: f.DSN("")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, text := range []string{"a", strings.Repeat("long text ", 40)} {
		// The fake answers no rows, so a statement that returns its row ends in ErrNotFound:
		// only what was sent matters here.
		_ = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			child := runs.Run{RunID: uuid.New(), TenantID: "tenant-" + text, AgentID: "agent-" + text}
			_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, uuid.New(), uuid.New(), child, "purpose "+text, time.Now())...)
			return err
		})
	}
	got := f.DeclarationsOf("INSERT INTO dbo.SubAgentDelegations")
	if len(got) != 2 || got[0] == "" || got[0] != got[1] {
		t.Errorf("declaration lists of two delegation inserts: %q; want one list, twice", got)
	}
}
