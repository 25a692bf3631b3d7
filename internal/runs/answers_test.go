package runs_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestAnswersAreTheRowsAsStored: the enqueue, the continuation and the claim build their answers from what
// they sent rather than reading whole rows back (BENCHMARKS.md), so each answer must be
// exactly the row a later read returns, on every dialect. The clock sits between
// milliseconds so that a time answered untruncated shows; the specs set and leave unset
// every optional column.
func TestAnswersAreTheRowsAsStored(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.clock.Advance(1234567 * time.Nanosecond)
		env, key := "staging", "answers-1"
		deadline := epoch.Add(time.Hour + 777*time.Microsecond)
		due := epoch.Add(-time.Minute + 3*time.Microsecond)
		parent := e.enqueue(spec("parent"))
		for name, s := range map[string]runs.Spec{
			"bare": spec("bare"),
			"full": spec("full", func(s *runs.Spec) {
				s.EnvironmentID, s.IdempotencyKey, s.DeadlineAt, s.DueAt = &env, &key, &deadline, &due
				s.Input = runs.JSONText(`{"b":[1,2],"a":"é"}`)
				s.ParentRunID = &parent.RunID
				s.Band = api.BandInteractive
			}),
		} {
			t.Run(name, func(t *testing.T) {
				r := e.enqueue(s)
				if got := e.get(r.RunID); !reflect.DeepEqual(asRead(got), asRead(r)) {
					t.Fatalf("enqueue answered\n%+v\nthe row is\n%+v", r, got)
				}
			})
		}
		cl := e.claim()
		var stored attempts.Attempt
		err := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
			var err error
			stored, err = attempts.Get(e.ctx, tx, e.tenant, cl.Attempt.AttemptID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored, cl.Attempt) {
			t.Fatalf("claim answered the attempt\n%+v\nthe row is\n%+v", cl.Attempt, stored)
		}
		if got := e.get(cl.Run.RunID); !reflect.DeepEqual(asRead(got), asRead(cl.Run)) {
			t.Fatalf("claim answered the run\n%+v\nthe row is\n%+v", cl.Run, got)
		}
		// A continuation is inserted by the same statement from the ended run's row.
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			runs.Completion{State: api.AttemptFailed}); err != nil {
			t.Fatal(err)
		}
		later := epoch.Add(2*time.Hour + 5*time.Microsecond)
		next, created, err := e.svc.Continue(e.ctx, e.caller, cl.Run.RunID, runs.Continuation{DueAt: &later})
		if err != nil || !created {
			t.Fatalf("continue: created=%v err=%v", created, err)
		}
		if got := e.get(next.RunID); !reflect.DeepEqual(asRead(got), asRead(next)) {
			t.Fatalf("continue answered\n%+v\nthe row is\n%+v", next, got)
		}
	})
}

// asRead is r without the fields a plain read does not select (the head marker and the
// request hash are the service's own, never answered).
func asRead(r runs.Run) runs.Run {
	r.SubjectHead, r.RequestHash = false, nil
	return r
}

// TestEndsAnswerTheAttemptAsStored: an attempt's end answers only the columns its fence did
// not read (attempts.EndFenced) and builds the rest from the fence's row and its own
// arguments, so the attempt a complete, a release, a park or the reaper's take-back answers
// must be exactly the row a later read returns, on every dialect: after a patch (phase,
// correction, context snapshot), an observed cancel, with and without an outcome hash and an
// error with and without details. The clock sits between milliseconds.
func TestEndsAnswerTheAttemptAsStored(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.clock.Advance(1234567 * time.Nanosecond)
		hash, ref, phase := "sha256:abc", "ctx-7", api.PhaseActing
		for _, c := range []struct {
			name string
			// prepare runs on the claimed attempt before its end.
			prepare func(t *testing.T, cl runs.Claimed)
			end     func(cl runs.Claimed) (attempts.Attempt, error)
		}{
			{"complete", nil, func(cl runs.Claimed) (attempts.Attempt, error) {
				return e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptSucceeded})
			}},
			{"complete patched, hashed, failed with details", func(t *testing.T, cl runs.Claimed) {
				if _, err := e.svc.PatchAttempt(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.AttemptPatch{Phase: &phase, Correction: true, ContextSnapshotRef: &ref}); err != nil {
					t.Fatal(err)
				}
			}, func(cl runs.Claimed) (attempts.Attempt, error) {
				return e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{
					State: api.AttemptFailed, OutcomeHash: &hash,
					Error: &attempts.Failure{Code: "tool_timeout", Message: "no answer", Details: `{"stack":["a.go:1"]}`}})
			}},
			{"release after an observed cancel, error without details", func(t *testing.T, cl runs.Claimed) {
				if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
					t.Fatal(err)
				}
				if _, err := e.svc.ObserveCancellation(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken); err != nil {
					t.Fatal(err)
				}
			}, func(cl runs.Claimed) (attempts.Attempt, error) {
				return e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Release{Error: &attempts.Failure{Code: "stopping", Message: ""}})
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				e.enqueue(spec("ends-" + c.name))
				cl := e.claim()
				if c.prepare != nil {
					c.prepare(t, cl)
				}
				e.clock.Advance(time.Second + 3*time.Microsecond)
				got, err := c.end(cl)
				if err != nil {
					t.Fatal(err)
				}
				var stored attempts.Attempt
				err = e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
					var err error
					stored, err = attempts.Get(e.ctx, tx, e.tenant, cl.Attempt.AttemptID)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(stored, got) {
					t.Fatalf("the end answered\n%+v\nthe row is\n%+v", got, stored)
				}
				e.agree()
			})
		}
	})
}

// TestLeavingRunIsTheRowAsStored: a run leaving its lease answers only the four columns its
// fence did not read (leaveLease builds the rest from the fence's row and what it wrote), so
// the run the hooks get must hold, in every column Hooks.RunChanged names, exactly what a
// later read returns: ended by a complete (with an error), queued again by a release, ended
// by a release after a cancel, with a parent and a continuation source set, and ended with
// another run of its subject queued (whose head marker must then be set).
func TestLeavingRunIsTheRowAsStored(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.clock.Advance(1234567 * time.Nanosecond)
		var changed []runs.Run
		e.svc.AddHooks(runs.Hooks{RunChanged: func(_ context.Context, _ *sqldb.Tx, r runs.Run) error {
			changed = append(changed, r)
			return nil
		}})
		// The hooks' columns of a run leaving its lease.
		read := func(r runs.Run) runs.Run {
			return runs.Run{RunID: r.RunID, TenantID: r.TenantID, ProjectID: r.ProjectID, Subject: r.Subject, Kind: r.Kind,
				AgentID: r.AgentID, State: r.State, Attempt: r.Attempt, EndedAt: r.EndedAt, Outcome: r.Outcome,
				ErrorCode: r.ErrorCode, ParentRunID: r.ParentRunID, ContinuedFromRunID: r.ContinuedFromRunID}
		}
		parent := e.enqueue(spec("leaving-parent"))
		first := e.claim()
		if _, err := e.svc.Complete(e.ctx, e.tenant, first.Attempt.AttemptID, first.Lease.FencingToken,
			runs.Completion{State: api.AttemptFailed, Error: &attempts.Failure{Code: "broke", Message: "it broke"}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.Continue(e.ctx, e.caller, first.Run.RunID, runs.Continuation{}); err != nil {
			t.Fatal(err)
		}
		e.enqueue(spec("leaving-child", func(s *runs.Spec) { s.ParentRunID = &parent.RunID }))
		e.enqueue(spec("leaving-next"))
		for _, c := range []struct {
			name string
			end  func(cl runs.Claimed) error
		}{
			{"release queues again", func(cl runs.Claimed) error {
				_, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Release{Error: &attempts.Failure{Code: "later", Message: "back soon"}})
				return err
			}},
			{"release after a cancel ends", func(cl runs.Claimed) error {
				if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
					return err
				}
				_, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{})
				return err
			}},
			{"complete ends", func(cl runs.Claimed) error {
				_, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptSucceeded})
				return err
			}},
			// The fence reads whether the subject has another queued run (SQLite's fenceWhole):
			// with one, the end marks it the head.
			{"complete ends, the subject's next run queued", func(cl runs.Claimed) error {
				e.enqueue(spec(cl.Run.Subject))
				_, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptSucceeded})
				return err
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				cl := e.claim()
				e.clock.Advance(time.Second + 3*time.Microsecond)
				changed = nil
				if err := c.end(cl); err != nil {
					t.Fatal(err)
				}
				if len(changed) == 0 {
					t.Fatal("no RunChanged")
				}
				got := changed[len(changed)-1]
				if want := read(e.get(cl.Run.RunID)); !reflect.DeepEqual(read(got), want) {
					t.Fatalf("the hooks got\n%+v\nthe row is\n%+v", read(got), want)
				}
				e.agree()
			})
		}
	})
}
