package calls_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// FuzzCallRequest is apitest.FuzzAppend on POST …/calls; the seed corpus is in
// testdata/fuzz/FuzzCallRequest.
//
//	go test ./internal/calls -run '^$' -fuzz FuzzCallRequest -fuzztime 60s
func FuzzCallRequest(f *testing.F) {
	s := newStack(f, 4096) // a small body limit, so that 413 is reachable
	// state is what a write changes: the attempt's call count and their highest version.
	state := func(t *testing.T, tenant string, attemptID uuid.UUID) (int, sqldb.RowVersion) {
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

	apitest.FuzzAppend(f, s.Stack, "calls", state)
}
