package runs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
)

// TestHeadMarkerFollowsEveryOperation runs a few hundred random operations over three
// subjects (enqueues, some at the same instant so ties fall to RunId, and with due times
// in the past and future; claims; heartbeats; completes; releases with and without a
// delay; cancels of queued and leased runs; continues; leases left to expire and taken
// back by the reaper; deadlines passing) and checks after every one that the head markers
// and the leased counts are their definitions (Service.Disagreements), and that a claim
// takes exactly the run the definition says: the oldest queued run of a subject with no
// leased run.
func TestHeadMarkerFollowsEveryOperation(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		e.project("p2")
		rng := rand.New(rand.NewPCG(1, 2))
		subjects := []string{"a", "b", "c"}
		var leased []runs.Claimed
		pick := func(n int) int { return rng.IntN(n) }
		counts := map[string]int{}
		for step := range 400 {
			op := pick(10)
			switch {
			case op < 3: // enqueue
				s := spec(subjects[pick(3)], func(s *runs.Spec) {
					if pick(2) == 0 {
						s.ProjectID = "p2"
					}
					if pick(4) == 0 {
						d := e.clock.Now().Add(time.Duration(pick(3)-1) * time.Second)
						s.DueAt = &d
					}
					if pick(5) == 0 {
						d := e.clock.Now().Add(time.Duration(1+pick(5)) * time.Second)
						s.DeadlineAt = &d
						s.DueAt = nil
					}
					s.Band = api.Band(pick(3))
				})
				if _, _, err := e.svc.Enqueue(e.ctx, e.caller, s); err != nil {
					t.Fatalf("step %d enqueue: %v", step, err)
				}
				counts["enqueue"]++
			case op < 5: // claim
				want := e.expectedHeads(t)
				cl, err := e.svc.Claim(e.ctx, e.caller, claimReq("h"))
				if errors.Is(err, runs.ErrNothingToClaim) {
					for id, r := range want {
						if !r.DueAt.After(e.clock.Now()) {
							t.Fatalf("step %d: nothing claimed, but head %s of %s is due", step, id, r.Subject)
						}
					}
					counts["claim-none"]++
					continue
				}
				if err != nil {
					t.Fatalf("step %d claim: %v", step, err)
				}
				if _, ok := want[cl.Run.RunID]; !ok {
					t.Fatalf("step %d: claimed %s of %s, which is not a head by the definition", step, cl.Run.RunID, cl.Run.Subject)
				}
				leased = append(leased, cl)
				counts["claim"]++
			case op < 8 && len(leased) > 0: // end a lease one way or another
				i := pick(len(leased))
				cl := leased[i]
				leased = append(leased[:i], leased[i+1:]...)
				var err error
				switch pick(5) {
				case 0:
					_, err = e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded})
				case 1:
					_, err = e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptFailed})
				case 2:
					zero := time.Duration(0)
					_, err = e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{RetryAfter: &zero})
				case 3:
					_, err = e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{Charge: true})
				default:
					_, err = e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID)
					leased = append(leased, cl) // still leased, with a cancel pending
				}
				// A lease taken back by the reaper (and maybe claimed again) refuses its old
				// holder: that is the fence, not a failure.
				if err != nil && !apperr.Is(err, api.CodeLeaseExpired) && !apperr.Is(err, api.CodeAttemptEnded) &&
					!apperr.Is(err, api.CodeStaleLease) {
					t.Fatalf("step %d: end a lease: %v", step, err)
				}
				counts["end"]++
			case op == 8: // cancel a random run, or continue an ended one
				rs, err := e.svc.List(e.ctx, e.tenant, runs.ListFilter{Limit: 500})
				if err != nil || len(rs) == 0 {
					continue
				}
				r := rs[pick(len(rs))]
				if r.State == api.RunEnded && pick(2) == 0 {
					_, _, err = e.svc.Continue(e.ctx, e.caller, r.RunID, runs.Continuation{})
					if err != nil && !apperr.Is(err, api.CodeAttemptsExhausted) {
						t.Fatalf("step %d continue: %v", step, err)
					}
					counts["continue"]++
				} else if _, err := e.svc.Cancel(e.ctx, e.tenant, r.RunID); err != nil {
					t.Fatalf("step %d cancel: %v", step, err)
				} else {
					counts["cancel"]++
				}
			default: // time passes; the reaper takes back expired leases and ends overdue runs
				e.clock.Advance(time.Duration(pick(40)) * time.Second)
				if _, err := e.svc.Reap(e.ctx); err != nil {
					t.Fatalf("step %d reap: %v", step, err)
				}
				counts["reap"]++
			}
			e.agree()
			if pick(3) == 0 {
				e.clock.Advance(time.Duration(pick(2)) * time.Millisecond) // ties on QueuedAt otherwise
			}
		}
		t.Logf("operations: %v", counts)
		for _, op := range []string{"enqueue", "claim", "end", "cancel", "continue", "reap"} {
			if counts[op] == 0 {
				t.Errorf("no %s ran: the walk does not cover the marker's changes", op)
			}
		}
	})
}

// expectedHeads computes the head definition from the runs themselves: per subject, the
// oldest queued run (QueuedAt, then RunId as the dialect orders it, as the claim does) of
// a subject with no leased run.
func (e *env) expectedHeads(t *testing.T) map[uuid.UUID]runs.Run {
	t.Helper()
	rs, err := e.svc.List(e.ctx, e.tenant, runs.ListFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// List is newest first in the dialect's (QueuedAt, RunId) order: the last queued run of
	// a subject in that order is its oldest.
	oldest := map[string]runs.Run{}
	leasedSubject := map[string]bool{}
	for _, r := range rs {
		switch r.State {
		case api.RunLeased:
			leasedSubject[r.Subject] = true
		case api.RunQueued:
			oldest[r.Subject] = r
		}
	}
	heads := map[uuid.UUID]runs.Run{}
	for s, r := range oldest {
		if !leasedSubject[s] {
			heads[r.RunID] = r
		}
	}
	return heads
}

// TestLeasedCountsLeaveTheProjectsETagAlone: a claim, a complete and a take-back change
// the project's leased count (read from its own row) but not the project's ETag, so an
// admin's If-Match update of a busy project succeeds.
func TestLeasedCountsLeaveTheProjectsETagAlone(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		store := projects.NewStore(e.db)
		before, err := store.Get(e.ctx, e.tenant, "p1")
		if err != nil || before.LeasedCount != 0 {
			t.Fatalf("project before: %+v %v", before, err)
		}
		for i := range 3 {
			e.enqueue(spec(fmt.Sprintf("s%d", i)))
		}
		cl := e.claim()
		e.claim()
		during, err := store.Get(e.ctx, e.tenant, "p1")
		if err != nil || during.LeasedCount != 2 || during.Version != before.Version {
			t.Fatalf("project with two leases: count %d version %d (was %d), %v", during.LeasedCount, during.Version, before.Version, err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		off := false
		if _, _, err := store.Put(e.ctx, e.tenant, "p1", projects.Change{Active: &off, IfMatch: &before.Version}); err != nil {
			t.Fatalf("If-Match update of a busy project with the ETag read before its claims: %v", err)
		}
		after, err := store.Get(e.ctx, e.tenant, "p1")
		if err != nil || after.LeasedCount != 1 || after.Active {
			t.Fatalf("project after: %+v %v", after, err)
		}
		e.agree()
	})
}

// TestEnqueueChecksItsDeadline: deadlineAt must be after dueAt (or now without one) and in
// the future by the transaction's clock; a refused enqueue writes nothing, while an exact
// repeat of an accepted one still answers it after its deadline came close.
func TestEnqueueChecksItsDeadline(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		now := e.clock.Now()
		at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
		cases := []struct {
			name          string
			due, deadline *time.Time
			reason        string
		}{
			{"past", nil, at(-time.Second), "must be in the future"},
			{"now", nil, at(0), "must be in the future"},
			{"before due", at(time.Hour), at(time.Minute), "must be after dueAt"},
			{"at due", at(time.Hour), at(time.Hour), "must be after dueAt"},
			{"past with due in the past", at(-time.Hour), at(-time.Minute), "must be in the future"},
		}
		for _, c := range cases {
			_, _, err := e.svc.Enqueue(e.ctx, e.caller, spec("s", func(s *runs.Spec) { s.DueAt, s.DeadlineAt = c.due, c.deadline }))
			ae, ok := apperr.As(err)
			if !ok || ae.Code != api.CodeInvalidRequest || len(ae.Fields) != 1 || ae.Fields[0].Field != "deadlineAt" || ae.Fields[0].Reason != c.reason {
				t.Fatalf("%s: got %v, want invalid_request naming deadlineAt (%s)", c.name, err, c.reason)
			}
		}
		if rs, err := e.svc.List(e.ctx, e.tenant, runs.ListFilter{Limit: 10}); err != nil || len(rs) != 0 {
			t.Fatalf("refused enqueues wrote %d runs (%v)", len(rs), err)
		}
		key := "k"
		ok := spec("s", func(s *runs.Spec) { s.DeadlineAt = at(time.Minute); s.IdempotencyKey = &key })
		first := e.enqueue(ok)
		e.clock.Advance(2 * time.Minute)
		again, created, err := e.svc.Enqueue(e.ctx, e.caller, ok)
		if err != nil || created || again.RunID != first.RunID {
			t.Fatalf("repeat after the deadline passed: created=%v err=%v", created, err)
		}
	})
}

// TestFenceAnswers: each refusal of the fence has its code, in the documented order, and
// the detail tells an older attempt from an old epoch.
func TestFenceAnswers(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		first := e.claim()
		zero := time.Duration(0)
		if _, err := e.svc.Release(e.ctx, e.tenant, first.Attempt.AttemptID, 1, runs.Release{RetryAfter: &zero}); err != nil {
			t.Fatal(err)
		}
		second := e.claim() // epoch 2
		check := func(name string, attempt uuid.UUID, token int64, want api.ProblemCode, detail string) {
			t.Helper()
			_, err := e.svc.Heartbeat(e.ctx, e.tenant, attempt, token, 0)
			ae, ok := apperr.As(err)
			if !ok || ae.Code != want || !strings.Contains(ae.Detail, detail) {
				t.Fatalf("%s: got %v, want %s (%q)", name, err, want, detail)
			}
		}
		check("old token on the old attempt", first.Attempt.AttemptID, 1, api.CodeStaleLease, "not the run's current epoch")
		check("current token on the old attempt", first.Attempt.AttemptID, 2, api.CodeStaleLease, "not the run's current attempt")
		check("future token", second.Attempt.AttemptID, 3, api.CodeStaleLease, "not the run's current epoch")
		e.clock.Advance(31 * time.Second)
		check("lease passed", second.Attempt.AttemptID, 2, api.CodeLeaseExpired, "has passed")
		if _, err := e.svc.Reap(e.ctx); err != nil {
			t.Fatal(err)
		}
		check("attempt lost", second.Attempt.AttemptID, 2, api.CodeAttemptEnded, "has ended (lost)")
		check("missing attempt", uuid.New(), 2, api.CodeNotFound, "")
		e.agree()
	})
}

// TestObserveCancellation: 409 no_cancel_requested while no cancel is pending; once
// recorded, a repeat answers the first time, also after the lease ended.
func TestObserveCancellation(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		id := cl.Attempt.AttemptID
		if _, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 1); !apperr.Is(err, api.CodeNoCancelRequested) {
			t.Fatalf("no cancel pending: got %v, want no_cancel_requested", err)
		}
		if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		first, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 1)
		if err != nil || first.CancellationObservedAt == nil {
			t.Fatalf("observe: %+v %v", first, err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, id, 1, runs.Completion{State: api.AttemptCancelled}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		again, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 1)
		if err != nil || !again.CancellationObservedAt.Equal(*first.CancellationObservedAt) {
			t.Fatalf("repeat after the end: %+v %v, want the first time", again, err)
		}
		if _, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 2); !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("repeat with another token: got %v, want stale_lease", err)
		}
	})
}
