package calls_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// FuzzCallRequest feeds arbitrary bytes as the body of POST …/calls through the real
// handler stack (auth, body limit, strict binding, validation, the fenced store) and checks
// that the answer is one a client is promised (2xx, 400, 404, 409, 413: never a 500), and
// that a refused body (400, 409, 413) wrote nothing. The attempt's lease is held at fencing
// token 1 on a clock that never moves, so valid bodies (see the seed corpus in
// testdata/fuzz/FuzzCallRequest) are accepted, repeated or conflict.
//
//	go test ./internal/calls -run '^$' -fuzz FuzzCallRequest -fuzztime 60s
func FuzzCallRequest(f *testing.F) {
	s := newStack(f, 4096) // a small body limit, so that 413 is reachable
	tenant, _, rt := s.TenantKeys(f)
	l := s.Lease(f, rt)
	if l.Token != 1 {
		f.Fatalf("first claim of a fresh tenant has token %d; the seed corpus assumes 1", l.Token)
	}
	attemptID := uuid.MustParse(l.AttemptID)
	path := "/v1/attempts/" + l.AttemptID + "/calls"

	// state is what a write changes: the attempt's call count and their highest version.
	state := func(t *testing.T) (int, sqldb.RowVersion) {
		var st struct {
			N int              `db:"N"`
			V sqldb.RowVersion `db:"V"`
		}
		err := s.DB.Read(context.Background(), sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			return tx.GetContext(context.Background(), &st,
				`SELECT COUNT(*) AS N, COALESCE(MAX(Version), 0) AS V FROM CallRecords WHERE TenantId = ?1 AND AttemptId = ?2`,
				tenant, attemptID)
		})
		if err != nil {
			t.Fatalf("read state: %v", err)
		}
		return st.N, st.V
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		apitest.CheckAppend(t, s.Stack, path, rt, body, "calls", state)
	})
}
