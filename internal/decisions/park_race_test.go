package decisions_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/runs"
)

// The races of parking (issue 28 item 6), each run many times on every dialect: whatever
// the order the database puts them in, no run is left waiting on a condition that closed,
// and nothing acknowledged is lost.
func TestParkRaces(t *testing.T) {
	t.Parallel()
	const rounds = 20
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Run("ParkRacingAnAnswer", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			for i := range rounds {
				cl := e.claimed("s")
				d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
				var wg sync.WaitGroup
				var parkErr, answerErr error
				wg.Add(2)
				go func() {
					defer wg.Done()
					_, parkErr = e.Svc.Park(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
				}()
				go func() {
					defer wg.Done()
					_, answerErr = e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, approve(d))
				}()
				wg.Wait()
				if parkErr != nil || answerErr != nil {
					t.Fatalf("round %d: park %v, answer %v", i, parkErr, answerErr)
				}
				next, ok := e.tryClaim()
				if !ok || next.Run.RunID != cl.Run.RunID {
					t.Fatalf("round %d: the answered run is not due (claimed %v)", i, ok)
				}
				e.Complete(next)
			}
		})
		t.Run("AnswerRacingACancel", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			for i := range rounds {
				cl := e.claimed("s")
				d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
				e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
				var wg sync.WaitGroup
				var cancelErr, answerErr error
				wg.Add(2)
				go func() {
					defer wg.Done()
					_, cancelErr = e.Svc.Cancel(e.Ctx, e.Tenant, cl.Run.RunID)
				}()
				go func() {
					defer wg.Done()
					_, answerErr = e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, approve(d))
				}()
				wg.Wait()
				if cancelErr != nil {
					t.Fatalf("round %d: cancel %v", i, cancelErr)
				}
				got := e.get(d.DecisionID)
				switch {
				case answerErr == nil && got.Status == api.DecisionApproved:
				case apperr.Is(answerErr, api.CodeDecisionClosed) && got.Status == api.DecisionCancelled:
				default:
					t.Fatalf("round %d: answer %v, decision %s", i, answerErr, got.Status)
				}
				if r := e.run(cl.Run.RunID); r.State != api.RunEnded || *r.Outcome != api.OutcomeCancelled {
					t.Fatalf("round %d: run %s %v", i, r.State, r.Outcome)
				}
				e.wantNothingToClaim("after the cancel")
			}
		})
		t.Run("TwoReplicasCloseTheLastTwoConditionsAtOnce", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			// A second replica: its own run-lease core and decision store on the same database.
			svc2 := runs.NewService(e.DB, runs.DefaultConfig(), nil)
			svc2.AddHooks(decisions.Hooks())
			store2 := decisions.NewStore(e.DB, svc2)
			for i := range rounds {
				cl := e.claimed("s")
				d1 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
				d2 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
				e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d1.DecisionID, d2.DecisionID}})
				var wg sync.WaitGroup
				errs := make([]error, 2)
				wg.Add(2)
				go func() {
					defer wg.Done()
					_, errs[0] = e.store.Answer(e.Ctx, e.Tenant, d1.DecisionID, approve(d1))
				}()
				go func() {
					defer wg.Done()
					_, errs[1] = store2.Answer(e.Ctx, e.Tenant, d2.DecisionID, approve(d2))
				}()
				wg.Wait()
				if errs[0] != nil || errs[1] != nil {
					t.Fatalf("round %d: answers %v", i, errs)
				}
				next, ok := e.tryClaim()
				if !ok || next.Run.RunID != cl.Run.RunID {
					t.Fatalf("round %d: both conditions closed but the run is not due (claimed %v)", i, ok)
				}
				e.Complete(next)
			}
		})
		t.Run("TheReaperLeavesAParkedRunAlone", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			cl := e.claimed("s")
			d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
			e.park(cl, runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}})
			before := e.run(cl.Run.RunID)
			e.Clock.Advance(48 * time.Hour)
			if _, err := e.Svc.Reap(e.Ctx); err != nil {
				t.Fatal(err)
			}
			after := e.run(cl.Run.RunID)
			if after.State != api.RunQueued || after.Attempt != before.Attempt || !after.DueAt.Equal(before.DueAt) {
				t.Fatalf("the reaper changed a parked run: %+v", after)
			}
			if got := e.get(d.DecisionID); got.Status != api.DecisionPending {
				t.Fatalf("decision %s", got.Status)
			}
		})
	})
}
