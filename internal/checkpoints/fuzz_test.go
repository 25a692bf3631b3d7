package checkpoints_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// FuzzCheckpointRequest feeds arbitrary bytes as the body of POST …/checkpoints through the
// real handler stack (auth, body limit, strict binding, validation, the fenced store) and
// checks that the answer is one a client is promised (2xx, 400, 404, 409, 413: never a
// 500), and that a refused body (400, 409, 413) wrote nothing. The attempt's lease is held
// at fencing token 1 on a clock that never moves, so valid bodies (see the seed corpus in
// testdata/fuzz/FuzzCheckpointRequest) are accepted, repeated or conflict.
//
//	go test ./internal/checkpoints -run '^$' -fuzz FuzzCheckpointRequest -fuzztime 60s
func FuzzCheckpointRequest(f *testing.F) {
	s := newStack(f, 4096) // a small body limit, so that 413 is reachable
	tenant, _, rt := s.TenantKeys(f)
	l := s.Lease(f, rt)
	if l.Token != 1 {
		f.Fatalf("first claim of a fresh tenant has token %d; the seed corpus assumes 1", l.Token)
	}
	attemptID := uuid.MustParse(l.AttemptID)
	path := "/v1/attempts/" + l.AttemptID + "/checkpoints"

	// state is what a write changes: the checkpoint count and the attempt's version (which
	// SetLastCheckpoint stamps).
	state := func(t *testing.T) (int, sqldb.RowVersion) {
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

	f.Fuzz(func(t *testing.T, body []byte) {
		apitest.CheckAppend(t, s.Stack, path, rt, body, "checkpoints", state)
	})
}
