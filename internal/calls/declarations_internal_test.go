package calls

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The call insert sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLCallInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "INSERT INTO dbo.CallRecords", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		f := runs.Fenced{Attempt: attempts.Attempt{AttemptID: uuid.New(), TenantID: "tenant-" + text}, Now: time.Now()}
		n := Draft{Sequence: 1, Target: "https://example.com/" + text, RequestHash: text}
		_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, uuid.New(), f, n)...)
		return err
	})
}
