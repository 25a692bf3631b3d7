package delegations_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// chain enqueues a run with parent as its parent run (no delegation) on agent's own
// subject and continues it hops times, cancelling each queued run to end it; it returns
// the last run, queued.
func (e *env) chain(parent runs.Run, agent string, hops int) runs.Run {
	e.T.Helper()
	r := e.enqueue(spec("chain-"+agent, agent, func(s *runs.Spec) { s.ParentRunID = &parent.RunID; s.MaxAttempts = 1000 }))
	for i := range hops {
		if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, r.RunID); err != nil {
			e.T.Fatalf("cancel hop %d: %v", i, err)
		}
		next, _, err := e.Svc.Continue(e.Ctx, e.Caller, r.RunID, runs.Continuation{})
		if err != nil {
			e.T.Fatalf("continue hop %d: %v", i, err)
		}
		r = next
	}
	return r
}

// statements counts the statements the database runs while fn runs.
func statements(db *sqldb.DB, fn func()) int64 {
	var n atomic.Int64
	db.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error { n.Add(1); return nil })
	defer db.SetStatementHook(nil)
	fn()
	return n.Load()
}

// claimRelease claims agent's run and gives it back due at once, as the issue measured.
func (e *env) claimRelease(agent string) {
	e.T.Helper()
	cl := e.claim(agent)
	zero := runs.Release{RetryAfter: new(time.Duration)}
	if _, err := e.Svc.Release(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, zero); err != nil {
		e.T.Fatalf("release: %v", err)
	}
}

// TestChainWriteCostIsFlat: a claim and a release of the last run of a 1,000-long chain of
// continuations with a parent run (and no delegation) send as many statements as those of
// a 3-long chain, and at most 1.5x those of a fresh run with the same parent: the
// delegation hook no longer walks the chain.
func TestChainWriteCostIsFlat(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		root := e.enqueue(spec("root", parentAgent))
		e.chain(root, "fresh", 0)
		e.chain(root, "short", 2)
		e.chain(root, "long", 999)
		cost := map[string]int64{}
		for _, agent := range []string{"fresh", "short", "long"} {
			cost[agent] = statements(e.DB, func() { e.claimRelease(agent) })
		}
		t.Logf("statements for a claim and a release: fresh run %d, 3-long chain %d, 1,000-long chain %d",
			cost["fresh"], cost["short"], cost["long"])
		if cost["fresh"] == 0 {
			t.Fatal("no statement counted: the hook saw nothing")
		}
		if cost["long"] != cost["short"] {
			t.Errorf("a 1,000-long chain costs %d statements, a 3-long one %d: the cost grows with the chain", cost["long"], cost["short"])
		}
		if 2*cost["long"] > 3*cost["fresh"] {
			t.Errorf("a 1,000-long chain costs %d statements, more than 1.5x a fresh run's %d", cost["long"], cost["fresh"])
		}
	})
}

// TestPlainChainBesideADelegatedOneLeavesTheDelegationAlone: a plain continuation chain
// with the same parent run and the same subject as a delegated child (the one case where
// the hook walks a chain) changes nothing of the delegation, while the delegated chain's
// continuations still move it.
func TestPlainChainBesideADelegatedOneLeavesTheDelegationAlone(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		d := e.delegate(cl, request("shared"))
		unchanged := func(what string) {
			t.Helper()
			if got := e.get(d.DelegationID); got.Version != d.Version || got.Status != d.Status {
				t.Fatalf("%s changed the delegation: %+v (was %+v)", what, got, d)
			}
		}
		// The same subject as the delegated child, under the same parent run, queued after it
		// (the clock stands still unless moved, and the subject's queue is in QueuedAt order).
		e.Clock.Advance(time.Second)
		sibling := e.enqueue(spec("shared", "sibling-agent", func(s *runs.Spec) { s.ParentRunID = &cl.Run.RunID }))
		for range 2 {
			if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, sibling.RunID); err != nil {
				t.Fatal(err)
			}
			next, _, err := e.Svc.Continue(e.Ctx, e.Caller, sibling.RunID, runs.Continuation{})
			if err != nil {
				t.Fatal(err)
			}
			sibling = next
		}
		unchanged("continuing the sibling chain")

		// The delegated child is the subject's oldest queued run: it runs first, and fails.
		first := e.claim(childAgent)
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(first, api.AttemptFailed)
		e.wantStatus(&d, api.DelegationFailed)

		// Then the sibling chain's last run is leased and ends, and the delegation stays as
		// its own chain left it.
		e.complete(e.claim("sibling-agent"), api.AttemptSucceeded)
		unchanged("claiming and completing the sibling chain's last run")

		// The delegated chain still carries its status through its continuation.
		next, _, err := e.Svc.Continue(e.Ctx, e.Caller, d.ChildRunID, runs.Continuation{})
		if err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationPending)
		again := e.claim(childAgent)
		if again.Run.RunID != next.RunID {
			t.Fatalf("claimed %s, want the continuation %s", again.Run.RunID, next.RunID)
		}
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(again, api.AttemptSucceeded)
		e.wantStatus(&d, api.DelegationSucceeded)
	})
}
