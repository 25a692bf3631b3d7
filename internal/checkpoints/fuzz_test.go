package checkpoints_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// FuzzCheckpointRequest is apitest.FuzzAppend on POST …/checkpoints; the seed corpus is in
// testdata/fuzz/FuzzCheckpointRequest.
//
//	go test ./internal/checkpoints -run '^$' -fuzz FuzzCheckpointRequest -fuzztime 60s
func FuzzCheckpointRequest(f *testing.F) {
	s := newStack(f, 4096) // a small body limit, so that 413 is reachable
	// state is what a write changes: the checkpoint count and the attempt's version (which
	// SetLastCheckpoint stamps).
	state := func(t *testing.T, tenant string, attemptID uuid.UUID) (int, sqldb.RowVersion) {
		var (
			n int
			a attempts.Attempt
		)
		err := s.DB.Read(context.Background(), sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			if err := tx.GetContext(context.Background(), &n,
				`SELECT COUNT(*) FROM Checkpoints WHERE TenantId = ?1 AND AttemptId = ?2`, tenant, attemptID); err != nil {
				return err
			}
			var err error
			a, err = attempts.Get(context.Background(), tx, tenant, attemptID)
			return err
		})
		if err != nil {
			t.Fatalf("read state: %v", err)
		}
		return n, a.Version
	}

	apitest.FuzzAppend(f, s.Stack, "checkpoints", state)
}
