package calls_test

import (
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestRecordAndFinishAreTwoStatements bounds the fenced call writes (issue 12: at most
// three on the common path): each is the fence (one read of attempt and run) and one write
// that answers the row.
func TestRecordAndFinishAreTwoStatements(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, epoch)
		s := calls.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		stop := apitest.Statements(e.DB)
		c, created, err := s.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			calls.Draft{Sequence: 1, Kind: api.CallModel, Target: "m", RequestHash: "h"})
		if got := stop(); err != nil || !created || len(got) > 2 {
			t.Fatalf("record: %v, %d statements %q, want at most 2", err, len(got), got)
		}
		stop = apitest.Statements(e.DB)
		_, err = s.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, calls.Finish{Status: api.CallSucceeded})
		if got := stop(); err != nil || len(got) > 2 {
			t.Fatalf("finish: %v, %d statements %q, want at most 2", err, len(got), got)
		}
	})
}
