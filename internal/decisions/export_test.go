package decisions

import (
	"context"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// ExpirePendingBatch is ExpirePending with a chosen batch size.
func ExpirePendingBatch(ctx context.Context, db *sqldb.DB, batch int) (int, error) {
	return expirePending(ctx, db, batch, nil)
}
