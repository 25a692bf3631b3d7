package retention_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/retention"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// chainStatement marks the purge's chain reads (members, and lockMembers under locks) in
// both dialects.
const chainStatement = "chain (RootId, RunId)"

// TestPurgeRejudgesUnderLocks races a change that makes a chain no longer purgeable (a
// continue, a child run, a longer retention) against a purge that has already selected it:
// the change lands, through the statement hook, between the purge's selection (its
// members read) and its locks. The purge must leave the chain whole, its checkpoints
// included, so the continuation resumes from them. Before the re-judgement moved ahead of
// the first delete, the chain's checkpoints, calls, decisions and delegations were gone.
//
// On SQLite the selection's read transaction keeps the snapshot it started with, so the
// selection judges the chain purgeable and the locked re-judgement is what keeps it (the
// hook sees the chain read twice). On SQL Server each READ COMMITTED statement sees what
// committed before it, so the selection itself may already see the change; the outcome is
// the same.
func TestPurgeRejudgesUnderLocks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// change makes the chain (root run id) no longer purgeable; kept is the run it adds,
		// if any.
		change func(e *env, root runs.Run) (added *runs.Run, err error)
	}{
		{"Continue", func(e *env, root runs.Run) (*runs.Run, error) {
			next, _, err := e.svc.Continue(e.ctx, e.caller, root.RunID, runs.Continuation{})
			return &next, err
		}},
		{"ChildRun", func(e *env, root runs.Run) (*runs.Run, error) {
			child, _, err := e.svc.Enqueue(e.ctx, e.caller, e.spec("long", parent(root.RunID)))
			return &child, err
		}},
		{"LongerRetention", func(e *env, root runs.Run) (*runs.Run, error) {
			ps := projects.NewStore(e.db)
			p, err := ps.Get(e.ctx, e.tenant, "short")
			if err != nil {
				return nil, err
			}
			_, _, err = ps.Put(e.ctx, e.tenant, "short", projects.Change{RetentionDays: ptr(90), IfMatch: &p.Version})
			return nil, err
		}},
	}
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, tgt)
				ids, cls := e.endedChain(e.caller, "short", 0)
				e.children(cls[0], 2)
				root, err := e.svc.Get(e.ctx, e.tenant, ids[0])
				if err != nil {
					t.Fatal(err)
				}
				e.clock.Advance(31 * day)
				before := e.count(e.tenant)

				var (
					reads   atomic.Int32
					added   *runs.Run
					changed = make(chan error, 1)
				)
				e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
					if !strings.Contains(st.Query, chainStatement) || reads.Add(1) != 1 {
						return nil
					}
					// The selection has read the roots; the change commits now, from another
					// transaction, before the selection reads the chain.
					var err error
					added, err = c.change(e, root)
					changed <- err
					return nil
				})
				res := e.purge(retention.Options{})
				e.db.SetStatementHook(nil)
				if err := <-changed; err != nil {
					t.Fatalf("the racing change: %v", err)
				}
				if res.Chains != 0 || res.Runs != 0 || res.Checkpoints != 0 {
					t.Fatalf("purge of a chain changed under it: %+v", res)
				}
				if tgt.Name == "sqlite" && reads.Load() < 2 {
					t.Fatalf("the chain was read %d times: the selection did not take it to the locked re-judgement", reads.Load())
				}
				after := e.count(e.tenant)
				for _, tbl := range []string{"ExecutionAttempts", "Checkpoints", "CallRecords", "DecisionRequests", "SubAgentDelegations"} {
					if after[tbl] != before[tbl] {
						t.Errorf("%s: %d rows, were %d", tbl, after[tbl], before[tbl])
					}
				}
				if !e.exists(e.tenant, root.RunID) {
					t.Fatal("the chain's root was purged")
				}
				if added != nil {
					if !e.exists(e.tenant, added.RunID) {
						t.Fatal("the run the change added is gone")
					}
					last, err := checkpoints.NewStore(e.db, e.svc).Last(e.ctx, e.tenant, added.RunID)
					if c.name == "Continue" && (err != nil || last.RunID != root.RunID) {
						t.Fatalf("the continuation resumes from %+v (%v), want the root's last checkpoint", last, err)
					}
				}
			})
		}
	})
}

// TestPurgeFinishesAnInterruptedPurge: a purge that stops after deleting a chain's runs and
// before deleting their attempts (here a chunk fails, as a crash would stop it) leaves the
// runs in the backlog, and the next purge deletes their attempts and rows first.
func TestPurgeFinishesAnInterruptedPurge(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		ids, cls := e.endedChain(e.caller, "short", 1, key("event-x"))
		for _, cl := range cls {
			e.children(cl, 2)
		}
		e.clock.Advance(31 * day)
		crash := errors.New("the process stopped")
		var failed atomic.Bool
		e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if strings.Contains(st.Query, "DELETE TOP (@p3) FROM dbo.Checkpoints") || strings.Contains(st.Query, "DELETE FROM Checkpoints") {
				failed.Store(true)
				return crash
			}
			return nil
		})
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		res, err := retention.Purge(e.ctx, e.db, retention.Options{Log: quiet})
		e.db.SetStatementHook(nil)
		if err != nil || !failed.Load() || res.FailedBatches != 1 || res.Chains != 1 || res.Runs != 2 || res.Checkpoints != 0 {
			t.Fatalf("interrupted purge: %+v %v", res, err)
		}
		mid := e.count(e.tenant)
		if mid["Runs"] != 0 || mid["ExecutionAttempts"] != 2 || mid["Checkpoints"] != 4 || mid["PurgeBacklog"] != 2 || mid["IdempotencyTombstones"] != 1 {
			t.Fatalf("after the interruption: %v", mid)
		}
		// The runs are gone for good: a continue finds nothing, the event's key its tombstone.
		if _, _, err := e.svc.Continue(e.ctx, e.caller, ids[1], runs.Continuation{}); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("continue of a purged run: %v", err)
		}
		res = e.purge(retention.Options{})
		if res.Attempts != 2 || res.Checkpoints != 4 || res.Calls != 4 || res.Decisions != 4 || res.Delegations != 4 || res.Chains != 0 {
			t.Fatalf("the next purge: %+v", res)
		}
		for tbl, n := range e.count(e.tenant) {
			if want := map[string]int{"IdempotencyTombstones": 1}[tbl]; n != want {
				t.Errorf("%s: %d rows left, want %d", tbl, n, want)
			}
		}
	})
}
