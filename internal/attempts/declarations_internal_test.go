package attempts

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The attempt insert sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLAttemptInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "INSERT INTO dbo.ExecutionAttempts", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		env := "env-" + text
		a := Attempt{AttemptID: uuid.New(), RunID: uuid.New(), TenantID: "tenant-" + text, ProjectID: "p-" + text, EnvironmentID: &env,
			ReleaseID: "rel-" + text, AgentID: "agent-" + text, ModelProfileID: "model-" + text, AdapterVersion: "v" + text}
		_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, a)...)
		return err
	})
}
