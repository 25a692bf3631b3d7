package runs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

// TestChainReadsBothWays: Chain reads a continuation chain through any of its runs, oldest
// first, bounded each way (trimmed when it goes on), and nothing of another tenant's, on
// every dialect.
func TestChainReadsBothWays(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
		prev := e.Enqueue()
		e.Complete(e.Claim())
		ids := []uuid.UUID{prev.RunID}
		for range 3 {
			next, _, err := e.Svc.Continue(e.Ctx, e.Caller, prev.RunID, runs.Continuation{})
			if err != nil {
				t.Fatal(err)
			}
			e.Complete(e.Claim())
			ids = append(ids, next.RunID)
			prev = next
		}
		idsOf := func(chain []runs.Run) string {
			var out []uuid.UUID
			for _, r := range chain {
				out = append(out, r.RunID)
			}
			return fmt.Sprint(out)
		}
		for i, id := range ids {
			chain, trimmed, err := e.Svc.Chain(e.Ctx, e.Tenant, id, 10)
			if err != nil || trimmed || idsOf(chain) != fmt.Sprint(ids) {
				t.Errorf("chain through run %d: %s trimmed %v (%v), want %v", i, idsOf(chain), trimmed, err, ids)
			}
		}
		// One run each way around the second: the first three, and the chain goes on.
		chain, trimmed, err := e.Svc.Chain(e.Ctx, e.Tenant, ids[1], 1)
		if err != nil || !trimmed || idsOf(chain) != fmt.Sprint(ids[:3]) {
			t.Errorf("chain within 1: %s trimmed %v (%v), want %v", idsOf(chain), trimmed, err, ids[:3])
		}
		// Around the first, one forward: it starts there, and goes on after.
		if chain, trimmed, err := e.Svc.Chain(e.Ctx, e.Tenant, ids[0], 1); err != nil || !trimmed || idsOf(chain) != fmt.Sprint(ids[:2]) {
			t.Errorf("chain from the first within 1: %s trimmed %v (%v)", idsOf(chain), trimmed, err)
		}
		other := e.Other(t)
		if _, _, err := e.Svc.Chain(e.Ctx, other.Tenant, ids[0], 10); !apperr.Is(err, api.CodeNotFound) {
			t.Errorf("another tenant's chain: %v, want not found", err)
		}
	})
}
