package runs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestStatementsPerRequest bounds what the run-lease core's requests cost in statements
// (issue 12), counted with the statement hook: a fenced write on the common path is at most
// three (the fence, the write, one update), and a claim's cost does not grow with the queue
// behind the heads it weighs (no per-candidate sibling probes, no backlog read).
func TestStatementsPerRequest(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		count := func(name string, max int, f func()) []string {
			t.Helper()
			stop := apitest.Statements(e.db)
			f()
			got := stop()
			t.Logf("%-10s %d statements: %q", name, len(got), got)
			if max > 0 && len(got) > max {
				t.Errorf("%s sent %d statements, want at most %d", name, len(got), max)
			}
			return got
		}
		var claimShallow []string
		count("enqueue", 3, func() {
			if _, _, err := e.svc.Enqueue(e.ctx, e.caller, spec("a")); err != nil {
				t.Fatal(err)
			}
		})
		var first runs.Claimed
		claimShallow = count("claim", 0, func() {
			var err error
			if first, err = e.svc.Claim(e.ctx, e.caller, claimReq("h")); err != nil {
				t.Fatal(err)
			}
		})
		// A run leased for the first time was never parked: its claim clears no waits. Once
		// leased before, a claim clears them (a parked run woken by time).
		if slices.ContainsFunc(claimShallow, touchesWaits) {
			t.Errorf("a run's first claim cleared its waits: %q", claimShallow)
		}
		zero := time.Duration(0)
		must(e.svc.Release(e.ctx, e.tenant, first.Attempt.AttemptID, first.Lease.FencingToken, runs.Release{RetryAfter: &zero}))(t)
		if again := count("claim", 0, func() { must(e.svc.Claim(e.ctx, e.caller, claimReq("h")))(t) }); !slices.ContainsFunc(again, touchesWaits) {
			t.Errorf("the claim of a run leased before did not clear its waits: %q", again)
		}
		// A deep queue: 200 runs behind one subject's head, and 100 other heads.
		for i := range 200 {
			e.enqueue(spec("deep", func(s *runs.Spec) { s.Input = runs.JSONText(fmt.Sprintf(`{"i":%d}`, i)) }))
		}
		for i := range 100 {
			e.enqueue(spec(fmt.Sprintf("wide-%d", i)))
		}
		var leased runs.Claimed
		claimDeep := count("claim", 0, func() {
			var err error
			leased, err = e.svc.Claim(e.ctx, e.caller, claimReq("h"))
			if err != nil {
				t.Fatal(err)
			}
		})
		if len(claimDeep) != len(claimShallow) {
			t.Errorf("a claim sent %d statements with a deep queue and %d with one run: its cost grows with the queue",
				len(claimDeep), len(claimShallow))
		}
		id, tok := leased.Attempt.AttemptID, leased.Lease.FencingToken
		count("heartbeat", 3, func() { must(e.svc.Heartbeat(e.ctx, e.tenant, id, tok, 0))(t) })
		acting := api.PhaseActing
		count("patch", 3, func() { must(e.svc.PatchAttempt(e.ctx, e.tenant, id, tok, runs.AttemptPatch{Phase: &acting}))(t) })
		count("complete", 0, func() {
			must(e.svc.Complete(e.ctx, e.tenant, id, tok, runs.Completion{State: api.AttemptSucceeded}))(t)
		})
		count("repeat", 3, func() {
			must(e.svc.Complete(e.ctx, e.tenant, id, tok, runs.Completion{State: api.AttemptSucceeded}))(t)
		})
		e.agree()
	})
}

// TestLeasedCountersComeLast: every transaction that leases or unleases a run takes the
// tenant's and the project's leased counters as its last two statements, after the hooks
// (queries_mssql.go, lock order): on SQL Server a transaction holding the counters must
// wait for nothing else, or a claim of a delegated child's continuation (its hook reading
// the parent run's attempts) and the parent's own complete (holding that attempt, waiting
// for the counters) deadlock.
func TestLeasedCountersComeLast(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		// A hook's statement, so the order of the hooks and the counters shows.
		e.svc.AddHooks(runs.Hooks{RunChanged: func(ctx context.Context, tx *sqldb.Tx, _ runs.Run) error {
			_, err := tx.ExecContext(ctx, "SELECT 1 AS HookRan")
			return err
		}})
		counted := func(name string, f func()) {
			t.Helper()
			stop := apitest.Statements(e.db)
			f()
			got := stop()
			n := len(got)
			if n < 3 || !strings.Contains(got[n-2], "TenantLeases") || !strings.Contains(got[n-1], "ProjectLeases") {
				t.Fatalf("%s: the last two statements are not the tenant's, then the project's counter: %q", name, got)
			}
			hook := slices.IndexFunc(got, func(s string) bool { return strings.Contains(s, "HookRan") })
			if hook < 0 || hook > n-3 {
				t.Fatalf("%s: the hook's statement is not before the counters: %q", name, got)
			}
		}
		e.enqueue(spec("a"))
		var cl runs.Claimed
		counted("claim", func() { cl = must(e.svc.Claim(e.ctx, e.caller, claimReq("h")))(t) })
		counted("release", func() {
			must(e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{}))(t)
		})
		e.clock.Advance(time.Hour)
		cl = must(e.svc.Claim(e.ctx, e.caller, claimReq("h")))(t)
		counted("complete", func() {
			must(e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded}))(t)
		})
		e.agree()
	})
}

// touchesWaits reports whether a statement reads or writes RunWaits.
func touchesWaits(q string) bool { return strings.Contains(q, "RunWaits") }
