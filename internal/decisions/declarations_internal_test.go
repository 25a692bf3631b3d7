package decisions

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The decision insert sends one declaration list whatever the length of its text (dbtest.DeclaresOneList
// says why a plan cache needs it).
func TestMSSQLDecisionInsertDeclaresOneListForEveryLength(t *testing.T) {
	t.Parallel()
	dbtest.DeclaresOneList(t, "INSERT INTO dbo.DecisionRequests", func(ctx context.Context, tx *sqldb.Tx, text string) error {
		rec, hash := "recommend "+text, text
		r := Request{ProposalHash: &hash, Recommendation: &rec, Options: []byte(`["` + text + `"]`)}
		_, err := tx.ExecContext(ctx, mssqlQueries.insert, insertArgs(tx.Dialect, uuid.New(), uuid.New(), "tenant-"+text, r, time.Now(), nil, 0)...)
		return err
	})
}
