package checkpoints

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The checkpoint insert sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLCheckpointInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "INSERT INTO dbo.Checkpoints", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		ref := "snap/" + text
		c := Checkpoint{CheckpointID: uuid.New(), AttemptID: uuid.New(), TenantID: "tenant-" + text, Sequence: 1,
			AdapterStateRef: "state/" + text, AdapterVersion: "v" + text, ContextSnapshotRef: &ref, Hash: text}
		_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, c)...)
		return err
	})
}
