package runs

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The lease sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLLeaseDeclaresOneListForEveryHolder(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "UPDATE dbo.Runs SET State = 1", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		var run Run
		return tx.GetContext(ctx, &run, mssqlQueries.lease, leaseArgs(tx.Dialect, "tenant-a", uuid.New(), text, 30, time.Now())...)
	})
}
