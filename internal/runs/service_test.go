package runs_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

func TestRunLease(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range leaseCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, tgt)
			})
		}
	})
}

type leaseCase struct {
	name string
	run  func(t *testing.T, tgt dbtest.Target)
}

var leaseCases = []leaseCase{
	{"EnqueueIsIdempotentPerTenant", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		key := "automation-7:event-9"
		first := e.enqueue(spec("s1", func(s *runs.Spec) { s.IdempotencyKey = &key }))
		repeat := spec("s1", func(s *runs.Spec) { s.IdempotencyKey = &key; s.StepID = first.StepID; s.SnapshotID = first.SnapshotID })
		again, created, err := e.svc.Enqueue(e.ctx, e.caller, repeat)
		if err != nil || created || again.RunID != first.RunID || again.Version != first.Version {
			t.Fatalf("exact repeat: created=%v err=%v run=%v, want the first run unchanged", created, err, again.RunID)
		}
		// The same key for a request that differs in a field defining the run is refused,
		// whichever field it is, and changes nothing.
		for name, change := range map[string]func(*runs.Spec){
			"subject": func(s *runs.Spec) { s.Subject = "other-subject" },
			"input":   func(s *runs.Spec) { s.Input = runs.JSONText(`{"a":1}`) },
			"band":    func(s *runs.Spec) { s.Band = api.BandInteractive },
			"dueAt":   func(s *runs.Spec) { d := epoch.Add(time.Hour); s.DueAt = &d },
		} {
			other := repeat
			change(&other)
			if _, _, err := e.svc.Enqueue(e.ctx, e.caller, other); !apperr.Is(err, api.CodeIdempotencyKeyReused) {
				t.Fatalf("key reused with another %s: got %v, want idempotency_key_reused", name, err)
			}
		}
		if got := e.get(first.RunID); got.Version != first.Version || got.Subject != "s1" {
			t.Fatalf("a refused reuse changed the run: %+v", got)
		}
		// The key is per tenant: another tenant gets its own run.
		other := newEnvOn(t, e)
		r, created, err := other.svc.Enqueue(other.ctx, other.caller, spec("s1", func(s *runs.Spec) { s.IdempotencyKey = &key }))
		if err != nil || !created || r.RunID == first.RunID {
			t.Fatalf("other tenant: created=%v err=%v", created, err)
		}
	}},
	{"EnqueueRefusesDepthPastLimit", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt, func(c *runs.Config) { c.MaxDepth = 2 })
		root := e.enqueue(spec("d0"))
		child := e.enqueue(spec("d1", func(s *runs.Spec) { s.ParentRunID = &root.RunID }))
		grand := e.enqueue(spec("d2", func(s *runs.Spec) { s.ParentRunID = &child.RunID }))
		if root.Depth != 0 || child.Depth != 1 || grand.Depth != 2 {
			t.Fatalf("depths %d %d %d, want 0 1 2", root.Depth, child.Depth, grand.Depth)
		}
		_, _, err := e.svc.Enqueue(e.ctx, e.caller, spec("d3", func(s *runs.Spec) { s.ParentRunID = &grand.RunID }))
		if !apperr.Is(err, api.CodeLoopDepth) {
			t.Fatalf("got %v, want loop_depth", err)
		}
	}},
	{"EnqueueRefusesUnknownAndForeignReferences", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		_, _, err := e.svc.Enqueue(e.ctx, e.caller, spec("s", func(s *runs.Spec) { s.ProjectID = "nope" }))
		if !apperr.Is(err, api.CodeUnknownProject) {
			t.Fatalf("missing project: got %v, want unknown_project", err)
		}
		other := newEnvOn(t, e)
		other.project("theirs")
		_, _, err = e.svc.Enqueue(e.ctx, e.caller, spec("s", func(s *runs.Spec) { s.ProjectID = "theirs" }))
		if !apperr.Is(err, api.CodeUnknownProject) {
			t.Fatalf("other tenant's project: got %v, want unknown_project", err)
		}
		theirRun := other.enqueue(spec("x"))
		_, _, err = e.svc.Enqueue(e.ctx, e.caller, spec("s", func(s *runs.Spec) { s.ParentRunID = &theirRun.RunID }))
		if !apperr.Is(err, api.CodeInvalidRequest) {
			t.Fatalf("other tenant's parent: got %v, want invalid_request as for a missing run", err)
		}
		if _, err := e.svc.Get(e.ctx, e.tenant, theirRun.RunID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("read of other tenant's run: got %v, want not_found", err)
		}
	}},
	{"ClaimCreatesAttemptAtNewEpoch", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		env := "prod"
		r := e.enqueue(spec("s", func(s *runs.Spec) { s.EnvironmentID = &env; s.MaxCorrections = 5 }))
		cl := e.claim()
		a := cl.Attempt
		if cl.Run.RunID != r.RunID || cl.Run.State != api.RunLeased || cl.Run.Epoch != 1 || cl.Lease.FencingToken != 1 {
			t.Fatalf("claimed run %+v lease %+v", cl.Run, cl.Lease)
		}
		if a.RunID != r.RunID || a.FencingToken != 1 || a.LeaseID != cl.Lease.LeaseID || a.State != api.AttemptRunning ||
			a.Phase != api.PhaseStarting || a.MaxCorrections != 5 || a.ReleaseID != "rel-1" || a.AdapterVersion != "1.0" ||
			a.ModelProfileID != "model-a" || a.StepID != r.StepID || a.SnapshotID != r.SnapshotID || a.EnvironmentID == nil ||
			*a.EnvironmentID != "prod" || !a.StartedAt.Equal(epoch) {
			t.Fatalf("attempt %+v does not carry the claim and run", a)
		}
		if want := epoch.Add(30 * time.Second); !cl.Lease.LeasedUntil.Equal(want) || !cl.Run.LeasedUntil.Equal(want) {
			t.Fatalf("leased until %v, want %v", cl.Lease.LeasedUntil, want)
		}
	}},
	{"ClaimAnswersNothingWhenNothingIsDue", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		later := epoch.Add(time.Minute)
		e.enqueue(spec("s", func(s *runs.Spec) { s.DueAt = &later }))
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("h")); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("got %v, want nothing to claim", err)
		}
		e.clock.Advance(time.Minute)
		e.claim()
	}},
	{"ClaimOrdersByBandThenAge", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		bg := e.enqueue(spec("bg", func(s *runs.Spec) { s.Band = api.BandBackground }))
		e.clock.Advance(time.Second)
		b1 := e.enqueue(spec("batch-1"))
		e.clock.Advance(time.Second)
		b2 := e.enqueue(spec("batch-2"))
		e.clock.Advance(time.Second)
		in := e.enqueue(spec("interactive", func(s *runs.Spec) { s.Band = api.BandInteractive }))
		got := []uuid.UUID{e.claim().Run.RunID, e.claim().Run.RunID, e.claim().Run.RunID, e.claim().Run.RunID}
		want := []uuid.UUID{in.RunID, b1.RunID, b2.RunID, bg.RunID}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("claim %d took %v, want %v (order interactive, batch by age, background)", i, got[i], want[i])
			}
		}
	}},
	{"ClaimAgesBackgroundIntoBatch", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt, func(c *runs.Config) { c.BandAging = 10 * time.Minute })
		bg := e.enqueue(spec("bg", func(s *runs.Spec) { s.Band = api.BandBackground }))
		e.clock.Advance(10 * time.Minute)
		batch := e.enqueue(spec("batch"))
		in := e.enqueue(spec("in", func(s *runs.Spec) { s.Band = api.BandInteractive }))
		// The aged background run competes with batch by age, and is older; it never
		// overtakes interactive work.
		if got := e.claim().Run.RunID; got != in.RunID {
			t.Fatalf("first claim %v, want the interactive run", got)
		}
		if got := e.claim().Run.RunID; got != bg.RunID {
			t.Fatalf("second claim %v, want the aged background run", got)
		}
		if got := e.claim().Run.RunID; got != batch.RunID {
			t.Fatalf("third claim %v, want the batch run", got)
		}
	}},
	{"ClaimFavoursTheLeastLeasedProject", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.project("p2")
		e.enqueue(spec("a1"))
		e.clock.Advance(time.Second)
		e.enqueue(spec("a2"))
		e.clock.Advance(time.Second)
		b1 := e.enqueue(spec("b1", func(s *runs.Spec) { s.ProjectID = "p2" }))
		first := e.claim()
		if first.Run.ProjectID != "p1" {
			t.Fatalf("first claim from %s, want the oldest (p1)", first.Run.ProjectID)
		}
		// p1 now holds a lease and p2 none: p2's younger run goes before p1's older one.
		if got := e.claim().Run.RunID; got != b1.RunID {
			t.Fatalf("second claim %v, want p2's run", got)
		}
	}},
	{"ClaimSkipsPausedProject", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.project("paused")
		e.enqueue(spec("s", func(s *runs.Spec) { s.ProjectID = "paused" }))
		e.pause("paused")
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("h")); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("got %v, want nothing to claim from a paused project", err)
		}
	}},
	{"ClaimTakesASubjectsRunsInQueueOrder", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		later := epoch.Add(-time.Hour) // the second run is due earlier, but queued later
		first := e.enqueue(spec("review:42"))
		e.clock.Advance(time.Second)
		second := e.enqueue(spec("review:42", func(s *runs.Spec) { s.DueAt = &later; s.Band = api.BandInteractive }))
		cl := e.claim()
		if cl.Run.RunID != first.RunID {
			t.Fatalf("claimed %v, want the subject's first queued run", cl.Run.RunID)
		}
		// Never two leased runs of one subject.
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("h2")); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("got %v, want nothing while the subject is leased", err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		if got := e.claim().Run.RunID; got != second.RunID {
			t.Fatalf("claimed %v, want the subject's second run", got)
		}
	}},
	{"ClaimFiltersByKindAgentAndProject", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.project("p2")
		e.enqueue(spec("a"))
		want := e.enqueue(spec("b", func(s *runs.Spec) { s.Kind = "summarise"; s.AgentID = "agent-2"; s.ProjectID = "p2" }))
		req := claimReq("h")
		req.Kinds, req.AgentIDs, req.ProjectIDs = []string{"summarise"}, []string{"agent-2"}, []string{"p2"}
		cl, err := e.svc.Claim(e.ctx, e.caller, req)
		if err != nil || cl.Run.RunID != want.RunID {
			t.Fatalf("filtered claim: %v %v", cl.Run.RunID, err)
		}
		req.Kinds = []string{"REVIEW"} // kinds compare case-sensitively
		if _, err := e.svc.Claim(e.ctx, e.caller, req); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("got %v, want nothing", err)
		}
	}},
	{"ClaimNeverTakesAnotherTenantsRun", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		other := newEnvOn(t, e)
		other.enqueue(spec("theirs"))
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("h")); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("got %v, want nothing: the only run is another tenant's", err)
		}
	}},
	{"BudgetHoldTakesNoEpoch", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.setBudget(1)
		e.enqueue(spec("a"))
		e.clock.Advance(time.Millisecond)
		waiting := e.enqueue(spec("b"))
		e.claim()
		_, err := e.svc.Claim(e.ctx, e.caller, claimReq("h"))
		var held *runs.BudgetHeldError
		if !errors.As(err, &held) || held.RetryAfter <= 0 {
			t.Fatalf("got %v, want a budget hold with a retry delay", err)
		}
		if r := e.get(waiting.RunID); r.State != api.RunQueued || r.Epoch != 0 {
			t.Fatalf("held run %+v changed", r)
		}
		e.agree()
	}},
	{"BudgetHoldsWhenTwoClaimsRaceForTheLastSlot", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.setBudget(1)
		e.enqueue(spec("a"))
		e.enqueue(spec("b"))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.svc.Claim(e.ctx, e.caller, claimReq("h"))
			}()
		}
		wg.Wait()
		var held *runs.BudgetHeldError
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.As(err, &held):
			default:
				t.Fatalf("claim failed: %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d claims leased a run, want exactly 1 under a budget of 1", ok)
		}
		e.agree()
	}},
	{"FenceRefusesStaleAndExpiredLeases", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		id := cl.Attempt.AttemptID
		if _, err := e.svc.Heartbeat(e.ctx, e.tenant, id, 2, 0); !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("wrong token: got %v, want stale_lease", err)
		}
		e.clock.Advance(31 * time.Second)
		if _, err := e.svc.Heartbeat(e.ctx, e.tenant, id, 1, 0); !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("expired: got %v, want lease_expired", err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, id, 1, runs.Completion{State: api.AttemptSucceeded}); !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("complete after expiry: got %v, want lease_expired", err)
		}
		r := e.get(cl.Run.RunID)
		if r.State != api.RunLeased || !r.LeasedUntil.Equal(*cl.Run.LeasedUntil) || r.Version != cl.Run.Version {
			t.Fatalf("a refused write changed the run: %+v", r)
		}
		// Another tenant's key cannot even find the attempt.
		other := newEnvOn(t, e)
		if _, err := other.svc.Heartbeat(e.ctx, other.tenant, id, 1, 0); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant: got %v, want not_found", err)
		}
		e.agree()
	}},
	{"HeartbeatRenewsAndReportsCancel", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		e.clock.Advance(20 * time.Second)
		hb, err := e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, 0)
		if err != nil || !hb.LeasedUntil.Equal(epoch.Add(50*time.Second)) || hb.CancelRequested {
			t.Fatalf("heartbeat %+v %v: want renewal by the stored 30 s", hb, err)
		}
		hb, err = e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, 120)
		if err != nil || !hb.LeasedUntil.Equal(epoch.Add(140*time.Second)) {
			t.Fatalf("heartbeat with leaseSeconds: %+v %v", hb, err)
		}
		if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		hb, err = e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, 0)
		if err != nil || !hb.CancelRequested {
			t.Fatalf("heartbeat after cancel: %+v %v, want cancelRequested", hb, err)
		}
		if r := e.get(cl.Run.RunID); r.Epoch != 1 {
			t.Fatalf("heartbeat changed the epoch to %d", r.Epoch)
		}
		e.agree()
	}},
	{"CompleteEndsAttemptAndRunAndRepeats", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		hash := "sha256:abc"
		a, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptFailed, OutcomeHash: &hash})
		if err != nil || a.State != api.AttemptFailed || a.EndedAt == nil || a.OutcomeHash == nil || *a.OutcomeHash != hash {
			t.Fatalf("complete: %+v %v", a, err)
		}
		r := e.get(cl.Run.RunID)
		if r.State != api.RunEnded || r.Outcome == nil || *r.Outcome != api.OutcomeFailed || r.EndedAt == nil {
			t.Fatalf("run after complete: %+v", r)
		}
		again, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptFailed, OutcomeHash: &hash})
		if err != nil || again.Version != a.Version {
			t.Fatalf("exact repeat: %v, want the stored attempt unchanged", err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptSucceeded}); !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("different completion after the end: got %v, want attempt_ended", err)
		}
		// A repeat presented with another token is refused as the fence refuses.
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 2, runs.Completion{State: api.AttemptFailed, OutcomeHash: &hash}); !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("repeat with another token: got %v, want stale_lease", err)
		}
		e.agree()
	}},
	{"ReleaseRequeuesAfterDelayOrEndsAtLimit", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		r := e.enqueue(spec("s", func(s *runs.Spec) { s.MaxAttempts = 2 }))
		cl := e.claim()
		wait := 5 * time.Second
		if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Release{Charge: false, RetryAfter: &wait}); err != nil {
			t.Fatal(err)
		}
		got := e.get(r.RunID)
		if got.State != api.RunQueued || got.Attempt != 0 || !got.DueAt.Equal(epoch.Add(wait)) || got.Epoch != 1 {
			t.Fatalf("uncharged release: %+v", got)
		}
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("h")); !errors.Is(err, runs.ErrNothingToClaim) {
			t.Fatalf("claimed before the delay passed: %v", err)
		}
		e.clock.Advance(wait)
		cl = e.claim()
		if cl.Lease.FencingToken != 2 {
			t.Fatalf("second claim token %d, want 2", cl.Lease.FencingToken)
		}
		a, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 2, runs.Release{Charge: true})
		if err != nil || a.State != api.AttemptReleased {
			t.Fatalf("charged release: %+v %v", a, err)
		}
		got = e.get(r.RunID)
		if got.State != api.RunQueued || got.Attempt != 1 || !got.DueAt.After(epoch.Add(wait)) {
			t.Fatalf("charged release: %+v, want queued after a backoff with one attempt spent", got)
		}
		e.clock.Advance(time.Hour)
		cl = e.claim()
		if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 3, runs.Release{Charge: true}); err != nil {
			t.Fatal(err)
		}
		got = e.get(r.RunID)
		if got.State != api.RunEnded || *got.Outcome != api.OutcomeExhausted || got.Attempt != 2 {
			t.Fatalf("release at the limit: %+v, want ended exhausted", got)
		}
		e.agree()
	}},
	{"ReleasePastDeadlineEnds", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		deadline := epoch.Add(time.Minute)
		r := e.enqueue(spec("s", func(s *runs.Spec) { s.DeadlineAt = &deadline }))
		req := claimReq("h")
		req.LeaseSeconds = 300
		cl, err := e.svc.Claim(e.ctx, e.caller, req)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, 0); err != nil {
			t.Fatal(err) // the lease is still good: only its run's deadline passed
		}
		if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Release{}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(r.RunID); got.State != api.RunEnded || *got.Outcome != api.OutcomeDeadline {
			t.Fatalf("release past the deadline: %+v", got)
		}
	}},
	{"ReaperTakesBackExpiredLeases", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		r := e.enqueue(spec("s"))
		e.clock.Advance(time.Millisecond)
		renewed := e.enqueue(spec("renewed"))
		cl := e.claim()
		cl2 := e.claim()
		if cl.Run.RunID != r.RunID || cl2.Run.RunID != renewed.RunID {
			t.Fatalf("claims took %v and %v", cl.Run.RunID, cl2.Run.RunID)
		}
		e.clock.Advance(25 * time.Second)
		if _, err := e.svc.Heartbeat(e.ctx, e.tenant, cl2.Attempt.AttemptID, 1, 0); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Second)
		res, err := e.svc.Reap(e.ctx)
		if err != nil || res.TakenBack < 1 {
			t.Fatalf("reap: %+v %v", res, err)
		}
		got := e.get(r.RunID)
		if got.State != api.RunQueued || got.Attempt != 1 || got.Epoch != 1 {
			t.Fatalf("taken-back run %+v, want queued with one attempt spent and its epoch kept", got)
		}
		if still := e.get(renewed.RunID); still.State != api.RunLeased {
			t.Fatalf("the renewed lease was taken back: %+v", still)
		}
		// The lost holder can change nothing; its attempt reads lost.
		if _, err := e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, 0); !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("lost holder's heartbeat: got %v, want attempt_ended", err)
		}
		e.agree()
		e.clock.Advance(time.Hour)
		next := e.claim()
		if next.Run.RunID != r.RunID || next.Lease.FencingToken != 2 {
			t.Fatalf("reclaim: run %v token %d, want the taken-back run at token 2", next.Run.RunID, next.Lease.FencingToken)
		}
	}},
	{"ReaperEndsAtLimitAndCancelPending", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		last := e.enqueue(spec("last", func(s *runs.Spec) { s.MaxAttempts = 1 }))
		e.clock.Advance(time.Millisecond)
		cancelled := e.enqueue(spec("cancelled"))
		e.claim()
		e.claim()
		if _, err := e.svc.Cancel(e.ctx, e.tenant, cancelled.RunID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.svc.Reap(e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.get(last.RunID); got.State != api.RunEnded || *got.Outcome != api.OutcomeExhausted {
			t.Fatalf("run at its limit: %+v", got)
		}
		if got := e.get(cancelled.RunID); got.State != api.RunEnded || *got.Outcome != api.OutcomeCancelled {
			t.Fatalf("run with a cancel pending: %+v", got)
		}
		e.agree()
	}},
	{"ReaperEndsQueuedRunsPastDeadline", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		deadline, due := epoch.Add(time.Minute), epoch.Add(30*time.Second)
		r := e.enqueue(spec("s", func(s *runs.Spec) { s.DeadlineAt = &deadline; s.DueAt = &due }))
		e.clock.Advance(2 * time.Minute)
		res, err := e.svc.Reap(e.ctx)
		if err != nil || res.Overdue != 1 {
			t.Fatalf("reap: %+v %v", res, err)
		}
		if got := e.get(r.RunID); got.State != api.RunEnded || *got.Outcome != api.OutcomeDeadline {
			t.Fatalf("overdue run: %+v", got)
		}
	}},
	{"CancelIsIdempotent", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		q := e.enqueue(spec("queued"))
		got, err := e.svc.Cancel(e.ctx, e.tenant, q.RunID)
		if err != nil || got.State != api.RunEnded || *got.Outcome != api.OutcomeCancelled {
			t.Fatalf("cancel queued: %+v %v", got, err)
		}
		again, err := e.svc.Cancel(e.ctx, e.tenant, q.RunID)
		if err != nil || again.Version != got.Version {
			t.Fatalf("repeat cancel changed the run: %v", err)
		}
		e.enqueue(spec("leased"))
		cl := e.claim()
		c1, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID)
		if err != nil || c1.State != api.RunLeased || c1.CancelRequestedAt == nil {
			t.Fatalf("cancel leased: %+v %v", c1, err)
		}
		c2, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID)
		if err != nil || !c2.CancelRequestedAt.Equal(*c1.CancelRequestedAt) {
			t.Fatalf("repeat cancel: %+v %v", c2, err)
		}
		if _, err := e.svc.Cancel(e.ctx, e.tenant, uuid.New()); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("cancel missing: %v", err)
		}
		e.agree()
	}},
	{"ContinueCarriesEpochsAndAttempts", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		r := e.enqueue(spec("s", func(s *runs.Spec) { s.MaxAttempts = 2 }))
		if _, _, err := e.svc.Continue(e.ctx, e.caller, r.RunID, runs.Continuation{}); !apperr.Is(err, api.CodeIllegalTransition) {
			t.Fatalf("continue a queued run: got %v, want illegal_transition", err)
		}
		cl := e.claim()
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		next, created, err := e.svc.Continue(e.ctx, e.caller, r.RunID, runs.Continuation{})
		if err != nil || !created || next.Epoch != 1 || next.Attempt != 1 || !next.ContinuedFromRunID.Valid ||
			next.ContinuedFromRunID.UUID != r.RunID || next.Subject != r.Subject || next.State != api.RunQueued {
			t.Fatalf("continuation %+v created=%v err=%v", next, created, err)
		}
		same, created, err := e.svc.Continue(e.ctx, e.caller, r.RunID, runs.Continuation{})
		if err != nil || created || same.RunID != next.RunID {
			t.Fatalf("repeat continue: %v created=%v err=%v", same.RunID, created, err)
		}
		cl = e.claim()
		if cl.Run.RunID != next.RunID || cl.Lease.FencingToken != 2 {
			t.Fatalf("continuation's claim: token %d, want 2 (greater than any before)", cl.Lease.FencingToken)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 2, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		third, _, err := e.svc.Continue(e.ctx, e.caller, next.RunID, runs.Continuation{})
		if err != nil || third.Attempt != 2 {
			t.Fatalf("second continuation: %+v %v", third, err)
		}
		cl = e.claim()
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 3, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.Continue(e.ctx, e.caller, third.RunID, runs.Continuation{}); !apperr.Is(err, api.CodeAttemptsExhausted) {
			t.Fatalf("continue past the limit: got %v, want attempts_exhausted", err)
		}
	}},
	{"LongPollWakesOnEnqueue", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt, func(c *runs.Config) { c.PollInterval = time.Hour })
		got := make(chan error, 1)
		go func() {
			req := claimReq("h")
			req.Wait = 30 * time.Second
			cl, err := e.svc.Claim(e.ctx, e.caller, req)
			if err == nil && cl.Run.Subject != "late" {
				err = errors.New("claimed the wrong run")
			}
			got <- err
		}()
		// With polling set to an hour, only the enqueue's wake-up can end the wait in time.
		e.enqueue(spec("late"))
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the waiting claim was not woken by the enqueue")
		}
	}},
}

// newEnvOn returns a second tenant on the same database and clock as e.
func newEnvOn(t *testing.T, e *env) *env {
	t.Helper()
	o := &env{t: t, db: e.db, clock: e.clock, svc: e.svc, ctx: e.ctx}
	o.tenant = dbtest.NewTenant(t, e.db)
	o.caller = runs.Caller{TenantID: o.tenant, KeyID: "other-key"}
	o.project("p1")
	return o
}

func TestAttemptPatch(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s", func(s *runs.Spec) { s.MaxCorrections = 1 }))
		cl := e.claim()
		id := cl.Attempt.AttemptID
		acting := api.PhaseActing
		ref := "snap://1"
		a, err := e.svc.PatchAttempt(e.ctx, e.tenant, id, 1, runs.AttemptPatch{Phase: &acting, ContextSnapshotRef: &ref})
		if err != nil || a.Phase != api.PhaseActing || a.ContextSnapshotRef == nil || *a.ContextSnapshotRef != ref {
			t.Fatalf("patch: %+v %v", a, err)
		}
		a, err = e.svc.PatchAttempt(e.ctx, e.tenant, id, 1, runs.AttemptPatch{Correction: true})
		if err != nil || a.CorrectionCount != 1 || a.Phase != api.PhaseActing {
			t.Fatalf("correction: %+v %v", a, err)
		}
		if _, err := e.svc.PatchAttempt(e.ctx, e.tenant, id, 1, runs.AttemptPatch{Correction: true}); !apperr.Is(err, api.CodeCorrectionLimit) {
			t.Fatalf("past the limit: got %v, want correction_limit", err)
		}
		if _, err := e.svc.PatchAttempt(e.ctx, e.tenant, id, 2, runs.AttemptPatch{Phase: &acting}); !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("stale token: got %v", err)
		}
		if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		first, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 1)
		if err != nil || first.CancellationObservedAt == nil {
			t.Fatalf("observe: %+v %v", first, err)
		}
		e.clock.Advance(time.Second)
		again, err := e.svc.ObserveCancellation(e.ctx, e.tenant, id, 1)
		if err != nil || !again.CancellationObservedAt.Equal(*first.CancellationObservedAt) {
			t.Fatalf("observe twice: %+v %v, want the first time kept", again, err)
		}
		e.agree()
	})
}
