package delegations

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The delegation insert sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLDelegationInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "INSERT INTO dbo.SubAgentDelegations", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		child := runs.Run{RunID: uuid.New(), TenantID: "tenant-" + text, AgentID: "agent-" + text}
		_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, uuid.New(), uuid.New(), child, "purpose "+text, time.Now())...)
		return err
	})
}
