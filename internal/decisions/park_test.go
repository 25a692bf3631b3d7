package decisions_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Parking (DESIGN.md section 5b, issue 28): a run waits on its decisions (or children, or
// a time) without a lease, and the transaction that closes its last condition makes it due.
func TestPark(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range parkCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newEnv(t, tgt))
			})
		}
	})
}

func (e *env) park(cl runs.Claimed, p runs.Park) {
	e.T.Helper()
	a, err := e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, p)
	if err != nil {
		e.T.Fatalf("park: %v", err)
	}
	if a.State != api.AttemptParked {
		e.T.Fatalf("parked attempt is %s", a.State)
	}
}

// tryClaim claims the tenant's next due run (ok false: nothing to claim).
func (e *env) tryClaim() (runs.Claimed, bool) {
	e.T.Helper()
	cl, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
	if errors.Is(err, runs.ErrNothingToClaim) {
		return runs.Claimed{}, false
	}
	if err != nil {
		e.T.Fatalf("claim: %v", err)
	}
	return cl, true
}

func (e *env) run(id uuid.UUID) runs.Run {
	e.T.Helper()
	r, err := e.Svc.Get(e.Ctx, e.Tenant, id)
	if err != nil {
		e.T.Fatalf("get run: %v", err)
	}
	return r
}

func (e *env) enqueue(subject string, parent *uuid.UUID) runs.Run {
	e.T.Helper()
	spec := runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: "agent-1", StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}
	if parent != nil {
		spec.ParentRunID = parent
	}
	r, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, spec)
	if err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	return r
}

func (e *env) approveNow(id uuid.UUID) {
	e.T.Helper()
	if _, err := e.store.Answer(e.Ctx, e.Tenant, id, approve(e.get(id))); err != nil {
		e.T.Fatalf("answer: %v", err)
	}
}

// waits counts the RunWaits rows of a run (its open conditions).
func (e *env) waits(runID uuid.UUID) int {
	e.T.Helper()
	var n int
	err := e.DB.Read(e.Ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(e.Ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM RunWaits WHERE RunId = ?`), runID)
	})
	if err != nil {
		e.T.Fatalf("count waits: %v", err)
	}
	return n
}

func (e *env) wantNothingToClaim(why string) {
	e.T.Helper()
	if cl, ok := e.tryClaim(); ok {
		e.T.Fatalf("%s: claimed run %s, want nothing", why, cl.Run.RunID)
	}
}

var parkCases = []storeCase{
	{"ParkedOnADecisionWaitsUntilTheAnswerThenIsDueAtOnceWithNoAttemptSpent", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		key := "step-1:approve"
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, IdempotencyKey: &key})
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		r := e.run(cl.Run.RunID)
		if r.State != api.RunQueued || r.Attempt != cl.Run.Attempt || r.LeasedUntil != nil {
			t.Fatalf("parked run: state %s attempt %d (was %d) leasedUntil %v", r.State, r.Attempt, cl.Run.Attempt, r.LeasedUntil)
		}
		e.Clock.Advance(time.Hour)
		e.wantNothingToClaim("while the decision is pending")
		if got := e.get(d.DecisionID); got.Status != api.DecisionPending {
			t.Fatalf("decision after park: %s", got.Status)
		}
		e.approveNow(d.DecisionID)
		next, ok := e.tryClaim()
		if !ok || next.Run.RunID != cl.Run.RunID {
			t.Fatalf("after the answer: claimed %v %v, want the parked run", ok, next.Run.RunID)
		}
		if next.Run.Attempt != cl.Run.Attempt || next.Lease.FencingToken != cl.Lease.FencingToken+1 {
			t.Fatalf("resumed run: attempt %d token %d", next.Run.Attempt, next.Lease.FencingToken)
		}
		// The resumed handler asks the same step's decision again: the answer, at once.
		again, created, err := e.store.Ask(e.Ctx, e.Tenant, next.Attempt.AttemptID, next.Lease.FencingToken,
			decisions.Request{Kind: api.DecisionApproval, IdempotencyKey: &key})
		if err != nil || created || again.DecisionID != d.DecisionID || again.Status != api.DecisionApproved {
			t.Fatalf("asked again: %+v created %v err %v", again, created, err)
		}
	}},
	{"AnIdempotencyKeyWithAnotherRequestIsReused", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		key := "k"
		e.ask(cl, decisions.Request{Kind: api.DecisionApproval, IdempotencyKey: &key})
		_, err := e.store.Request(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			decisions.Request{Kind: api.DecisionChoice, Options: json.RawMessage(`["a","b"]`), IdempotencyKey: &key})
		if !apperr.Is(err, api.CodeIdempotencyKeyReused) {
			t.Fatalf("another request under the key: %v", err)
		}
		if e.count() != 1 {
			t.Fatalf("%d decisions, want 1", e.count())
		}
	}},
	{"AParkedRunHoldsNoLeasedBudget", func(t *testing.T, e *env) {
		err := e.DB.Write(e.Ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(e.Ctx, tx.Rebind(`UPDATE Tenants SET MaxLeasedRuns = 1 WHERE TenantId = ?`), e.Tenant)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		cl := e.claimed("a")
		e.enqueue("b", nil)
		var held *runs.BudgetHeldError
		if _, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
			ModelProfileID: "m"}); !errors.As(err, &held) {
			t.Fatalf("second claim with a budget of 1: %v, want the budget held", err)
		}
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		next, ok := e.tryClaim()
		if !ok || next.Run.Subject != "b" {
			t.Fatalf("after parking: claimed %v %q, want subject b", ok, next.Run.Subject)
		}
	}},
	{"AParkedRunKeepsItsSubjectsPlaceAndACancelEndsItAtOnce", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		later := e.enqueue("s", nil)
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		e.wantNothingToClaim("a later run of the parked run's subject")
		r, err := e.Svc.Cancel(e.Ctx, e.Tenant, cl.Run.RunID)
		if err != nil || r.State != api.RunEnded || r.Outcome == nil || *r.Outcome != api.OutcomeCancelled {
			t.Fatalf("cancel a parked run: %+v %v", r, err)
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionCancelled {
			t.Fatalf("its decision after the run ended: %s", got.Status)
		}
		next, ok := e.tryClaim()
		if !ok || next.Run.RunID != later.RunID {
			t.Fatalf("after the cancel: %v %v, want the later run", ok, next.Run.RunID)
		}
	}},
	{"EveryConditionMustCloseAndOneMetAlreadyCounts", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d1 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		d2 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		d3 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.approveNow(d3.DecisionID)
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d1.DecisionID, d2.DecisionID, d3.DecisionID}})
		e.approveNow(d1.DecisionID)
		e.wantNothingToClaim("one of two open decisions answered")
		e.approveNow(d2.DecisionID)
		if _, ok := e.tryClaim(); !ok {
			t.Fatal("nothing to claim after the last answer")
		}
	}},
	{"ParkOnConditionsAllMetIsDueAtOnce", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.approveNow(d.DecisionID)
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		if _, ok := e.tryClaim(); !ok {
			t.Fatal("nothing to claim after parking on an answered decision")
		}
	}},
	{"ParkOnATimeIsDueThen", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		at := e.Clock.Now().Add(time.Minute)
		e.park(cl, runs.Park{DueAt: &at})
		e.wantNothingToClaim("before dueAt")
		e.Clock.Advance(time.Minute)
		if _, ok := e.tryClaim(); !ok {
			t.Fatal("nothing to claim at dueAt")
		}
	}},
	{"ARunWokenByTimeLeavesNoWaitsAndALaterAnswerMovesItNot", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		at := e.Clock.Now().Add(time.Minute)
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}, DueAt: &at})
		if n := e.waits(cl.Run.RunID); n != 1 {
			t.Fatalf("%d waits while parked, want 1", n)
		}
		e.Clock.Advance(time.Minute)
		woken, ok := e.tryClaim()
		if !ok || woken.Run.RunID != cl.Run.RunID {
			t.Fatalf("at dueAt: claimed %v %v, want the parked run", ok, woken.Run.RunID)
		}
		// Woken by time, the run waits on nothing: its decision, still pending, is no longer
		// a condition of it (else the overview would count it waiting once it is queued again,
		// and the answer would make it due before its retry).
		if n := e.waits(cl.Run.RunID); n != 0 {
			t.Fatalf("%d waits after the run was woken by time and claimed, want none", n)
		}
		hour := time.Hour
		if _, err := e.Svc.Release(e.Ctx, e.Tenant, woken.Attempt.AttemptID, woken.Lease.FencingToken,
			runs.Release{RetryAfter: &hour}); err != nil {
			t.Fatal(err)
		}
		e.approveNow(d.DecisionID)
		e.wantNothingToClaim("answered after the run was woken by time: its retry is an hour away")
		e.Clock.Advance(time.Hour)
		again, ok := e.tryClaim()
		if !ok || again.Run.RunID != cl.Run.RunID {
			t.Fatalf("after the retry delay: claimed %v %v", ok, again.Run.RunID)
		}
		if _, err := e.Svc.Complete(e.Ctx, e.Tenant, again.Attempt.AttemptID, again.Lease.FencingToken,
			runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		if n := e.waits(cl.Run.RunID); n != 0 {
			t.Fatalf("%d waits after the run ended, want none", n)
		}
	}},
	{"AnExpiryClosesTheCondition", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Minute})
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		e.Clock.Advance(2 * time.Minute)
		e.wantNothingToClaim("expired by time but not yet marked")
		if _, err := decisions.ExpirePending(e.Ctx, e.DB); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.tryClaim(); !ok {
			t.Fatal("nothing to claim after the expiry")
		}
	}},
	{"ParkWithACancelPendingEndsTheRunCancelled", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		r := e.run(cl.Run.RunID)
		if r.State != api.RunEnded || *r.Outcome != api.OutcomeCancelled {
			t.Fatalf("run %s %v, want ended cancelled", r.State, r.Outcome)
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionCancelled {
			t.Fatalf("decision %s, want cancelled", got.Status)
		}
	}},
	{"TheReaperEndsAParkedRunAtItsDeadline", func(t *testing.T, e *env) {
		deadline := e.Clock.Now().Add(time.Hour)
		spec := runs.Spec{ProjectID: "p1", Subject: "s", Kind: "review", AgentID: "agent-1", StepID: uuid.New(),
			SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3, DeadlineAt: &deadline}
		if _, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, spec); err != nil {
			t.Fatal(err)
		}
		cl, _ := e.tryClaim()
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
		e.Clock.Advance(2 * time.Hour)
		if _, err := e.Svc.Reap(e.Ctx); err != nil {
			t.Fatal(err)
		}
		r := e.run(cl.Run.RunID)
		if r.State != api.RunEnded || *r.Outcome != api.OutcomeDeadline {
			t.Fatalf("run %s %v, want ended deadline", r.State, r.Outcome)
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionCancelled {
			t.Fatalf("decision %s, want cancelled", got.Status)
		}
		e.answerClosed(d.DecisionID)
	}},
	{"AParentParkedOnItsChildrenIsDueWhenTheLastEnds", func(t *testing.T, e *env) {
		cl := e.claimed("parent")
		c1 := e.enqueue("child-1", &cl.Run.RunID)
		c2 := e.enqueue("child-2", &cl.Run.RunID)
		e.park(cl, runs.Park{ChildRunIDs: []uuid.UUID{c1.RunID, c2.RunID}})
		var leased []runs.Claimed
		for i, c := range []runs.Run{c1, c2} {
			got, ok := e.tryClaim()
			if !ok || got.Run.RunID != c.RunID {
				t.Fatalf("child %d: claimed %v %v", i, ok, got.Run.RunID)
			}
			leased = append(leased, got)
		}
		for i, got := range leased {
			if _, err := e.Svc.Complete(e.Ctx, e.Tenant, got.Attempt.AttemptID, got.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				e.wantNothingToClaim("one child still running")
			}
		}
		if got, ok := e.tryClaim(); !ok || got.Run.RunID != cl.Run.RunID {
			t.Fatalf("after the children ended: %v %v, want the parent", ok, got.Run.RunID)
		}
	}},
	{"ParkRefusesAnotherRunsDecisionOrChildAndChangesNothing", func(t *testing.T, e *env) {
		other := e.claimed("o")
		od := e.ask(other, decisions.Request{Kind: api.DecisionApproval})
		cl := e.claimed("s")
		stranger := e.enqueue("x", nil)
		_, err := e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Park{DecisionIDs: []uuid.UUID{od.DecisionID}})
		if !apperr.Is(err, api.CodeUnknownDecision) {
			t.Fatalf("another run's decision: %v", err)
		}
		_, err = e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Park{ChildRunIDs: []uuid.UUID{stranger.RunID}})
		if !apperr.Is(err, api.CodeUnknownRun) {
			t.Fatalf("a run that is not a child: %v", err)
		}
		_, err = e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Park{})
		if !apperr.Is(err, api.CodeInvalidRequest) {
			t.Fatalf("nothing named: %v", err)
		}
		if a := e.attempt(cl.Attempt.AttemptID); a.State != api.AttemptRunning {
			t.Fatalf("attempt after refused parks: %s", a.State)
		}
		o := e.other()
		ocl := o.claimed("s")
		od2 := o.ask(ocl, decisions.Request{Kind: api.DecisionApproval})
		_, err = e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Park{DecisionIDs: []uuid.UUID{od2.DecisionID}})
		if !apperr.Is(err, api.CodeUnknownDecision) {
			t.Fatalf("another tenant's decision: %v", err)
		}
	}},
	{"AParkRepeatAnswersTheParkedAttempt", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		p := runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}}
		e.park(cl, p)
		e.park(cl, p)
	}},
	{"RunDecisionsListEveryAttemptsDecisions", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d1 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Release(cl)
		cl2, _ := e.tryClaim()
		e.Clock.Advance(time.Second)
		d2 := e.ask(cl2, decisions.Request{Kind: api.DecisionApproval})
		got, err := e.store.ListByRun(e.Ctx, e.Tenant, cl.Run.RunID, nil, 10)
		if err != nil || !sameIDs(got, d1, d2) {
			t.Fatalf("run's decisions: %v %v", ids(got), err)
		}
		if _, err := e.other().store.ListByRun(e.Ctx, e.other().Tenant, cl.Run.RunID, nil, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("another tenant's run: %v", err)
		}
	}},
}

func (e *env) answerClosed(id uuid.UUID) {
	e.T.Helper()
	_, err := e.store.Answer(e.Ctx, e.Tenant, id, approve(e.get(id)))
	if !apperr.Is(err, api.CodeDecisionClosed) {
		e.T.Fatalf("answer a closed decision: %v", err)
	}
}
