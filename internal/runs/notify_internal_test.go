package runs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestNotifierWakesOneInTurn: a notice wakes the claimer that waited longest, with the
// line's length as its hop budget; a claimer that leaves after being woken gets the wake
// back to look for or hand on, one that leaves before gets nothing.
func TestNotifierWakesOneInTurn(t *testing.T) {
	t.Parallel()
	n := newNotifier()
	a, b, c := n.wait("t"), n.wait("t"), n.wait("t")
	other := n.wait("u")
	n.notify("t")
	if got := woken(a); got != 3 {
		t.Fatalf("first waiter woken with %d hops, want 3", got)
	}
	for _, w := range []*waiter{b, c, other} {
		if got := woken(w); got != -1 {
			t.Fatalf("a later waiter was woken too (%d)", got)
		}
	}
	n.notify("t")
	if hops, ok := n.leave("t", b); !ok || hops != 2 {
		t.Fatalf("leave after a wake: %d, %v; want 2, true", hops, ok)
	}
	if _, ok := n.leave("t", c); ok || n.waiters("t") != 0 {
		t.Fatalf("leave before a wake reported one, or left %d waiting", n.waiters("t"))
	}
	n.handOn("t", 5) // nobody waits: nothing happens, nothing is kept
	if d := n.wait("t"); woken(d) != -1 {
		t.Fatal("a hand-on with nobody waiting woke a later claimer")
	}
}

func woken(w *waiter) int {
	select {
	case h := <-w.woken:
		return h
	default:
		return -1
	}
}

// claimers runs claims that wait for work and counts every look (claim transaction).
type claimers struct {
	e     *faultEnv
	looks atomic.Int64
}

func newClaimers(t *testing.T, tgt dbtest.Target) *claimers {
	e := newFaultEnv(t, tgt)
	cfg := DefaultConfig()
	cfg.PollInterval = time.Hour // only a wake makes a waiting claim look again
	e.svc = NewService(e.db, cfg, nil)
	cl := &claimers{e: e}
	e.db.SetStatementHook(func(_ context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		if st.Query == e.svc.q.claimStart {
			cl.looks.Add(1)
		}
		return nil
	})
	t.Cleanup(func() { e.db.SetStatementHook(nil) })
	return cl
}

type claimResult struct {
	claimed Claimed
	err     error
}

// start begins a claim waiting up to an hour, and returns once it waits: it is in the
// line and has looked once more than before.
func (cl *claimers) start(ctx context.Context, req ClaimRequest) <-chan claimResult {
	cl.e.t.Helper()
	before, waiting := cl.looks.Load(), cl.e.svc.wake.waiters(cl.e.tenant)
	req.Wait = time.Hour
	out := make(chan claimResult, 1)
	go func() {
		c, err := cl.e.svc.Claim(ctx, cl.e.caller, req)
		out <- claimResult{c, err}
	}()
	cl.until(func() bool {
		return cl.looks.Load() == before+1 && cl.e.svc.wake.waiters(cl.e.tenant) == waiting+1
	})
	return out
}

// wantLease waits for the claim answering on ch to lease run; why says what waiting past
// the bound (on waiting, not on speed) means.
func (cl *claimers) wantLease(ch <-chan claimResult, run Run, why string) {
	cl.e.t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || r.claimed.Run.RunID != run.RunID {
			cl.e.t.Fatalf("%v, %v; want run %v", r.claimed.Run.RunID, r.err, run.RunID)
		}
	case <-time.After(30 * time.Second):
		cl.e.t.Fatal(why)
	}
}

// until waits for cond; the bound is on waiting, not on speed.
func (cl *claimers) until(cond func() bool) {
	cl.e.t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			cl.e.t.Fatal("timed out")
		}
	}
}

// TestAnEnqueueWakesOneClaimer: with eight claims waiting, one enqueue leases its run to
// one of them and makes at most two more looks (the winner's, and the one it hands the
// wake on to), not one per waiting claim.
func TestAnEnqueueWakesOneClaimer(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		cl := newClaimers(t, tgt)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const n = 8
		var results []<-chan claimResult
		for range n {
			results = append(results, cl.start(ctx, ClaimRequest{HolderID: "h"}))
		}
		answers := mergeResults(results)
		run := cl.e.enqueue(cl.e.spec("s"))
		var first claimResult
		select {
		case first = <-answers:
		case <-time.After(30 * time.Second):
			t.Fatal("no waiting claim leased the run")
		}
		if first.err != nil || first.claimed.Run.RunID != run.RunID {
			t.Fatalf("first answer: %v, %v; want the run", first.claimed.Run.RunID, first.err)
		}
		cancel()
		leased := 1
		for range n - 1 {
			r := <-answers
			if r.err == nil {
				leased++
			} else if !errors.Is(r.err, ErrNothingToClaim) && !errors.Is(r.err, context.Canceled) {
				t.Fatal(r.err)
			}
		}
		if leased != 1 {
			t.Fatalf("%d claims leased a run, want 1", leased)
		}
		if looks := cl.looks.Load(); looks > n+2 {
			t.Fatalf("%d looks for one enqueue with %d claims waiting, want at most %d", looks, n, n+2)
		}
	})
}

// mergeResults is one channel of every claim's answer.
func mergeResults(rs []<-chan claimResult) <-chan claimResult {
	out := make(chan claimResult, len(rs))
	for _, r := range rs {
		go func() {
			select {
			case v := <-r:
				out <- v
			case <-time.After(time.Minute):
			}
		}()
	}
	return out
}

// TestAWakeFiltersRefuseIsHandedOn: the claimer that waited longest has filters the new run
// does not match; the wake goes on to the next claimer, which leases it without waiting for
// a poll (an hour here).
func TestAWakeFiltersRefuseIsHandedOn(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		cl := newClaimers(t, tgt)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		other := cl.start(ctx, ClaimRequest{HolderID: "x", Kinds: []string{"other-kind"}})
		mine := cl.start(ctx, ClaimRequest{HolderID: "k", Kinds: []string{"k"}})
		run := cl.e.enqueue(cl.e.spec("s"))
		select {
		case r := <-mine:
			if r.err != nil || r.claimed.Run.RunID != run.RunID {
				t.Fatalf("%v, %v; want the run", r.claimed.Run.RunID, r.err)
			}
		case r := <-other:
			t.Fatalf("the claim for another kind answered: %v, %v", r.claimed.Run.RunID, r.err)
		case <-time.After(30 * time.Second):
			t.Fatal("the wake was not handed on to the claim whose kind matches")
		}
	})
}

// TestANewHeadWakesAClaimer: a run queued behind its subject's leased run, or behind an
// older queued run the waiting claim's filters do not take, becomes claimable when that run
// ends (completed, or cancelled while queued); the waiting claim is woken at once, not at
// its next poll (an hour here).
func TestANewHeadWakesAClaimer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// claimFirst leases the subject's first run before the claim waits; end ends it.
		claimFirst bool
		end        func(e *faultEnv, first Run, held Claimed) error
	}{
		{"Completed", true, func(e *faultEnv, _ Run, held Claimed) error {
			_, err := e.svc.Complete(e.ctx, e.tenant, held.Attempt.AttemptID, held.Lease.FencingToken,
				Completion{State: api.AttemptSucceeded})
			return err
		}},
		{"CancelledWhileQueued", false, func(e *faultEnv, first Run, _ Claimed) error {
			_, err := e.svc.Cancel(e.ctx, e.tenant, first.RunID)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
				cl := newClaimers(t, tgt)
				e := cl.e
				first := e.enqueue(e.spec("s"))
				nextSpec := e.spec("s")
				nextSpec.Kind = "next"
				next := e.enqueue(nextSpec)
				var held Claimed
				if tc.claimFirst {
					held = e.claim()
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				waiting := cl.start(ctx, ClaimRequest{HolderID: "w", Kinds: []string{"next"}})
				if err := tc.end(e, first, held); err != nil {
					t.Fatal(err)
				}
				cl.wantLease(waiting, next, "the waiting claim was not woken when the subject's next run became its head")
			})
		})
	}
}

// TestAPanickingClaimLeavesNoWaiter: a claim whose transaction panics (a hook, the driver;
// the server's Recover middleware keeps serving) leaves no waiter in the tenant's line,
// where it would take the next enqueue's wake from a claim that really waits.
func TestAPanickingClaimLeavesNoWaiter(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		cl := newClaimers(t, tgt)
		cl.e.svc.AddHooks(Hooks{CheckClaim: func(_ context.Context, _ *sqldb.Tx, _ string, req ClaimRequest) error {
			if req.HolderID == "boom" {
				panic("hook panics")
			}
			return nil
		}})
		func() {
			defer func() { _ = recover() }()
			_, _ = cl.e.svc.Claim(context.Background(), cl.e.caller, ClaimRequest{HolderID: "boom", Wait: time.Hour})
		}()
		if n := cl.e.svc.wake.waiters(cl.e.tenant); n != 0 {
			t.Errorf("%d waiter(s) left in the line by a claim that returned", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mine := cl.start(ctx, ClaimRequest{HolderID: "h"})
		run := cl.e.enqueue(cl.e.spec("s"))
		cl.wantLease(mine, run, "the waiting claim was not woken: the enqueue's wake went to the panicked claim's leaked waiter")
	})
}
