package decisions_test

import (
	"encoding/json"
	"fmt"
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

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range storeCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newEnv(t, tgt))
			})
		}
	})
}

type storeCase struct {
	name string
	run  func(t *testing.T, e *env)
}

func approve(d decisions.Decision) decisions.Answer {
	return decisions.Answer{Status: api.DecisionApproved, KeyID: "admin-key", IfMatch: d.Version}
}

func answerInput(d decisions.Decision) decisions.Answer {
	a := approve(d)
	a.Answer = json.RawMessage(`"yes"`)
	return a
}

var storeCases = []storeCase{
	{"RequestRecordsPendingDecisionAndAwaitsIt", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		hash, rec := "sha256:abc", "pick a\nbecause"
		d := e.ask(cl, decisions.Request{Kind: api.DecisionChoice, ProposalHash: &hash, Options: json.RawMessage(`{"choices":["a","b"]}`),
			Recommendation: &rec, ExpiresIn: time.Hour})
		if d.Status != api.DecisionPending || d.Kind != api.DecisionChoice || d.AttemptID != cl.Attempt.AttemptID ||
			!d.RequestedAt.Equal(epoch) || d.ExpiresAt == nil || !d.ExpiresAt.Equal(epoch.Add(time.Hour)) ||
			d.ProposalHash == nil || *d.ProposalHash != hash || d.Recommendation == nil || *d.Recommendation != rec ||
			string(d.Options) != `{"choices":["a","b"]}` || d.Answer != nil || d.AnsweredAt != nil || d.AnsweredBy != nil ||
			d.ApprovalID.Valid || d.Version == 0 {
			t.Fatalf("requested decision %+v", d)
		}
		if got := e.get(d.DecisionID); got.Version != d.Version || got.Status != api.DecisionPending || string(got.Options) != string(d.Options) {
			t.Fatalf("read back %+v, want %+v", got, d)
		}
		if a := e.attempt(cl.Attempt.AttemptID); a.Phase != api.PhaseAwaitingDecision {
			t.Fatalf("attempt phase %s, want awaiting_decision", a.Phase)
		}
		plain := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		if plain.Options != nil || plain.ExpiresAt != nil || plain.ProposalHash != nil || plain.Kind != api.DecisionApproval {
			t.Fatalf("plain decision %+v", plain)
		}
	}},
	{"RefusedRequestWritesNothing", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		id := cl.Attempt.AttemptID
		_, err := e.store.Request(e.Ctx, e.Tenant, id, cl.Lease.FencingToken+1, decisions.Request{Kind: api.DecisionInput})
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("stale token: got %v, want stale_lease", err)
		}
		if _, err := e.store.Request(e.Ctx, e.Tenant, uuid.New(), 1, decisions.Request{}); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
		e.Clock.Advance(31 * time.Second) // past the 30 s lease
		_, err = e.store.Request(e.Ctx, e.Tenant, id, cl.Lease.FencingToken, decisions.Request{Kind: api.DecisionInput})
		if !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("expired lease: got %v, want lease_expired", err)
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%d decisions written by refused requests", n)
		}
		if a := e.attempt(id); a.Phase != api.PhaseStarting {
			t.Fatalf("attempt phase %s after refused requests, want starting", a.Phase)
		}
	}},
	{"RequestAfterTheAttemptEndedIsRefused", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		_, err := e.store.Request(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 1, decisions.Request{})
		if !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("got %v, want attempt_ended", err)
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%d decisions written", n)
		}
	}},
	{"AnswerWithIfMatchClosesTheDecision", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(5 * time.Second)
		approval := uuid.New()
		a := approve(d)
		a.Answer, a.ApprovalID = json.RawMessage(`{"note":"ok"}`), &approval
		got, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, a)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != api.DecisionApproved || got.AnsweredAt == nil || !got.AnsweredAt.Equal(epoch.Add(5*time.Second)) ||
			got.AnsweredBy == nil || *got.AnsweredBy != "admin-key" || string(got.Answer) != `{"note":"ok"}` ||
			!got.ApprovalID.Valid || got.ApprovalID.UUID != approval || got.Version <= d.Version {
			t.Fatalf("answered decision %+v", got)
		}
		// The holder reads the answer back.
		if read := e.get(d.DecisionID); read.Status != api.DecisionApproved || read.Version != got.Version || string(read.Answer) != `{"note":"ok"}` {
			t.Fatalf("holder reads %+v", read)
		}
		r := e.ask(cl, decisions.Request{Kind: api.DecisionInput})
		rej, err := e.store.Answer(e.Ctx, e.Tenant, r.DecisionID, decisions.Answer{Status: api.DecisionRejected, KeyID: "k2", IfMatch: r.Version})
		if err != nil || rej.Status != api.DecisionRejected || rej.Answer != nil || rej.ApprovalID.Valid {
			t.Fatalf("reject: %+v %v", rej, err)
		}
	}},
	{"StaleIfMatchIsRefusedAndWritesNothing", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		other := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		for _, v := range []decisions.Decision{{Version: d.Version - 1}, {Version: other.Version}, {Version: d.Version + 1000}} {
			_, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, decisions.Answer{Status: api.DecisionApproved, KeyID: "k", IfMatch: v.Version})
			if !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("If-Match %d against version %d: got %v, want precondition_failed", v.Version, d.Version, err)
			}
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionPending || got.Version != d.Version || got.AnsweredAt != nil {
			t.Fatalf("a refused answer changed the decision: %+v", got)
		}
	}},
	{"AnswerAfterCloseIsDecisionClosed", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		first, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, approve(d))
		if err != nil {
			t.Fatal(err)
		}
		// Both the ETag the first answer was made against and the new one: the decision is
		// closed, which says more than a stale ETag would.
		for _, v := range []decisions.Decision{d, first} {
			_, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, decisions.Answer{Status: api.DecisionRejected, KeyID: "late", IfMatch: v.Version})
			if !apperr.Is(err, api.CodeDecisionClosed) {
				t.Fatalf("answer after close (If-Match %d): got %v, want decision_closed", v.Version, err)
			}
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionApproved || got.Version != first.Version || *got.AnsweredBy != "admin-key" {
			t.Fatalf("a refused answer changed the decision: %+v", got)
		}
	}},
	{"ConcurrentAnswersCloseTheDecisionOnce", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		const n = 8
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				status := []api.DecisionStatus{api.DecisionApproved, api.DecisionRejected}[i%2]
				_, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, decisions.Answer{Status: status, KeyID: fmt.Sprint("k", i), IfMatch: d.Version})
				errs <- err
			}(i)
		}
		wg.Wait()
		close(errs)
		won := 0
		for err := range errs {
			switch {
			case err == nil:
				won++
			case !apperr.Is(err, api.CodeDecisionClosed):
				t.Fatalf("a losing answer got %v, want decision_closed", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d answers won, want exactly 1", won)
		}
		if got := e.get(d.DecisionID); got.Status == api.DecisionPending || got.AnsweredBy == nil {
			t.Fatalf("decision after the race: %+v", got)
		}
	}},
	{"AttemptEndCancelsPendingDecisions", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		pending := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		soon := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: 10 * time.Second})
		answered := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		answered, err := e.store.Answer(e.Ctx, e.Tenant, answered.DecisionID, approve(answered))
		if err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(10 * time.Second) // soon is past its expiry; the lease (30 s) is not
		if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptSucceeded}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(pending.DecisionID); got.Status != api.DecisionCancelled || got.Version <= pending.Version || got.AnsweredAt != nil {
			t.Fatalf("pending decision after completion: %+v", got)
		}
		if e.stored(pending.DecisionID) != api.DecisionCancelled {
			t.Fatalf("cancelled status not stored")
		}
		// One that already read as expired stays expired.
		if got, st := e.get(soon.DecisionID), e.stored(soon.DecisionID); got.Status != api.DecisionExpired || st != api.DecisionExpired {
			t.Fatalf("expired-by-time decision after completion: read %s, stored %s", got.Status, st)
		}
		if got := e.get(answered.DecisionID); got.Status != api.DecisionApproved || got.Version != answered.Version {
			t.Fatalf("answered decision changed by completion: %+v", got)
		}
		_, err = e.store.Answer(e.Ctx, e.Tenant, pending.DecisionID, approve(e.get(pending.DecisionID)))
		if !apperr.Is(err, api.CodeDecisionClosed) {
			t.Fatalf("answer after cancel: got %v, want decision_closed", err)
		}
	}},
	{"PendingDecisionsOutliveReleasedAndLostAttemptsUntilTheRunEnds", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		released := e.ask(cl, decisions.Request{Kind: api.DecisionInput})
		if _, err := e.Svc.Release(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 1, runs.Release{RetryAfter: ptr(time.Duration(0))}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(released.DecisionID); got.Status != api.DecisionPending {
			t.Fatalf("after release: %s, want still pending", got.Status)
		}
		cl2, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h2", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
		if err != nil {
			t.Fatal(err)
		}
		lost := e.ask(cl2, decisions.Request{Kind: api.DecisionInput})
		e.Clock.Advance(31 * time.Second)
		if _, err := e.Svc.Reap(e.Ctx); err != nil {
			t.Fatal(err)
		}
		if a := e.attempt(cl2.Attempt.AttemptID); a.State != api.AttemptLost {
			t.Fatalf("attempt %s, want lost", a.State)
		}
		if got := e.get(lost.DecisionID); got.Status != api.DecisionPending {
			t.Fatalf("after the reaper took the lease back: %s, want still pending", got.Status)
		}
		// The first one is still answerable without a live lease.
		if _, err := e.store.Answer(e.Ctx, e.Tenant, released.DecisionID, answerInput(e.get(released.DecisionID))); err != nil {
			t.Fatalf("answer a decision of a released attempt: %v", err)
		}
		// The run ends (cancelled while queued): its pending decisions of every attempt close.
		if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		if got := e.get(lost.DecisionID); got.Status != api.DecisionCancelled {
			t.Fatalf("after the run ended: %s, want cancelled", got.Status)
		}
		if got := e.get(released.DecisionID); got.Status != api.DecisionApproved {
			t.Fatalf("answered decision after the run ended: %s, want approved", got.Status)
		}
	}},
	{"PastExpiryReadsAsExpiredThenExpirePendingMarksIt", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: 20 * time.Second})
		keep := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(19 * time.Second)
		if got := e.get(d.DecisionID); got.Status != api.DecisionPending {
			t.Fatalf("before expiry: %s", got.Status)
		}
		e.Clock.Advance(time.Second) // exactly at ExpiresAt
		got := e.get(d.DecisionID)
		if got.Status != api.DecisionExpired || got.Version != d.Version || e.stored(d.DecisionID) != api.DecisionPending {
			t.Fatalf("at expiry: read %s (version %d, was %d), stored %s; want expired on read, still pending in storage",
				got.Status, got.Version, d.Version, e.stored(d.DecisionID))
		}
		pending, err := e.store.List(e.Ctx, e.Tenant, decisions.ListFilter{Status: ptr(api.DecisionPending), Limit: 10})
		if err != nil || !sameIDs(pending, keep) {
			t.Fatalf("pending inbox %v (%v), want only the unexpired decision", ids(pending), err)
		}
		expired, err := e.store.List(e.Ctx, e.Tenant, decisions.ListFilter{Status: ptr(api.DecisionExpired), Limit: 10})
		if err != nil || !sameIDs(expired, d) || expired[0].Status != api.DecisionExpired {
			t.Fatalf("expired inbox %v (%v), want the expired decision", ids(expired), err)
		}
		byAttempt, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 10)
		if err != nil || len(byAttempt) != 2 {
			t.Fatalf("attempt's decisions %+v (%v)", byAttempt, err)
		}
		for _, b := range byAttempt {
			if want := map[bool]api.DecisionStatus{true: api.DecisionExpired, false: api.DecisionPending}[b.DecisionID == d.DecisionID]; b.Status != want {
				t.Fatalf("attempt's decision %s lists as %s, want %s", b.DecisionID, b.Status, want)
			}
		}
		// Closed by time: the current ETag does not help.
		if _, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, approve(got)); !apperr.Is(err, api.CodeDecisionClosed) {
			t.Fatalf("answer after expiry: got %v, want decision_closed", err)
		}
		n, err := decisions.ExpirePending(e.Ctx, e.DB)
		if err != nil || n < 1 {
			t.Fatalf("ExpirePending: %d %v", n, err)
		}
		marked := e.get(d.DecisionID)
		if e.stored(d.DecisionID) != api.DecisionExpired || marked.Status != api.DecisionExpired || marked.Version <= d.Version ||
			marked.AnsweredAt != nil {
			t.Fatalf("after ExpirePending: stored %s, read %+v", e.stored(d.DecisionID), marked)
		}
		if k := e.get(keep.DecisionID); k.Status != api.DecisionPending || k.Version != keep.Version {
			t.Fatalf("a decision without expiry was touched: %+v", k)
		}
		if _, err := decisions.ExpirePending(e.Ctx, e.DB); err != nil {
			t.Fatal(err)
		}
		if again := e.get(d.DecisionID); again.Version != marked.Version {
			t.Fatalf("a second pass touched an expired decision again")
		}
	}},
	{"ExpirePendingWorksInBoundedBatches", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		var expiring []decisions.Decision
		for i := 0; i < 5; i++ {
			expiring = append(expiring, e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Second}))
		}
		later := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Hour})
		e.Clock.Advance(2 * time.Second)
		n, err := decisions.ExpirePendingBatch(e.Ctx, e.DB, 2)
		if err != nil || n < 5 {
			t.Fatalf("ExpirePending in batches of 2: %d %v, want at least 5", n, err)
		}
		for _, d := range expiring {
			if st := e.stored(d.DecisionID); st != api.DecisionExpired {
				t.Fatalf("decision %s stored %s, want expired", d.DecisionID, st)
			}
		}
		if st := e.stored(later.DecisionID); st != api.DecisionPending {
			t.Fatalf("unexpired decision stored %s", st)
		}
	}},
	{"InboxListsPendingFirstThenOldestFirstByEffectiveStatus", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		var ds []decisions.Decision
		for i := 0; i < 5; i++ {
			r := decisions.Request{Kind: api.DecisionApproval}
			if i == 3 {
				r.ExpiresIn = time.Second
			}
			ds = append(ds, e.ask(cl, r))
			e.Clock.Advance(time.Second)
		}
		if _, err := e.store.Answer(e.Ctx, e.Tenant, ds[1].DecisionID, approve(ds[1])); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Answer(e.Ctx, e.Tenant, ds[2].DecisionID, decisions.Answer{Status: api.DecisionRejected, KeyID: "k", IfMatch: ds[2].Version}); err != nil {
			t.Fatal(err)
		}
		list := func(status *api.DecisionStatus, after *decisions.Position, limit int) []decisions.Decision {
			t.Helper()
			got, err := e.store.List(e.Ctx, e.Tenant, decisions.ListFilter{Status: status, After: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		// Pending first (ds[3] is past its expiry: not pending), each group oldest first.
		order := []decisions.Decision{ds[0], ds[4], ds[1], ds[2], ds[3]}
		all := list(nil, nil, 10)
		if !sameIDs(all, order...) {
			t.Fatalf("inbox %v, want pending first, then the rest, oldest first %v", ids(all), ids(order))
		}
		// Keyset paging across the two groups: pages of 1, 2 and 3 items each tile the inbox.
		for _, size := range []int{1, 2, 3} {
			var got []decisions.Decision
			var pos *decisions.Position
			for page := 0; page < 10; page++ {
				items := list(nil, pos, size)
				if len(items) == 0 {
					break
				}
				got = append(got, items...)
				last := items[len(items)-1]
				pos = &decisions.Position{Rank: decisions.Rank(last), RequestedAt: last.RequestedAt, DecisionID: last.DecisionID}
			}
			if !sameIDs(got, order...) {
				t.Fatalf("pages of %d: %v, want %v", size, ids(got), ids(order))
			}
		}
		for status, want := range map[api.DecisionStatus][]decisions.Decision{
			api.DecisionPending:   {ds[0], ds[4]},
			api.DecisionApproved:  {ds[1]},
			api.DecisionRejected:  {ds[2]},
			api.DecisionExpired:   {ds[3]},
			api.DecisionCancelled: nil,
		} {
			if got := list(ptr(status), nil, 10); !sameIDs(got, want...) {
				t.Fatalf("status %s: %v, want %v", status, ids(got), ids(want))
			}
		}
		pendingPage := list(ptr(api.DecisionPending), &decisions.Position{RequestedAt: ds[0].RequestedAt, DecisionID: ds[0].DecisionID}, 10)
		if !sameIDs(pendingPage, ds[4]) {
			t.Fatalf("pending after the first: %v", ids(pendingPage))
		}
		if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptFailed}); err != nil {
			t.Fatal(err)
		}
		if got := list(ptr(api.DecisionCancelled), nil, 10); !sameIDs(got, ds[0], ds[4]) {
			t.Fatalf("cancelled after completion: %v", ids(got))
		}
		if got := list(ptr(api.DecisionPending), nil, 10); len(got) != 0 {
			t.Fatalf("pending after completion: %v", ids(got))
		}
	}},
	{"ListByAttemptPagesInRequestOrder", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		for i := 0; i < 3; i++ {
			e.ask(cl, decisions.Request{Kind: api.DecisionInput})
		}
		// Same RequestedAt: DecisionId breaks the tie, and the keyset follows it.
		all, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 10)
		if err != nil || len(all) != 3 {
			t.Fatalf("list: %v %v", ids(all), err)
		}
		first, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		rest, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID,
			&decisions.Position{RequestedAt: first[1].RequestedAt, DecisionID: first[1].DecisionID}, 2)
		if err != nil || !sameIDs(append(first, rest...), all...) {
			t.Fatalf("pages %v + %v, want %v (%v)", ids(first), ids(rest), ids(all), err)
		}
		if _, err := e.store.ListByAttempt(e.Ctx, e.Tenant, uuid.New(), nil, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
	}},
	{"OtherTenantSeesNothing", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		o := e.other()
		if _, err := o.store.Get(o.Ctx, o.Tenant, d.DecisionID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant's read: got %v, want not_found", err)
		}
		if _, err := o.store.Answer(o.Ctx, o.Tenant, d.DecisionID, approve(d)); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant's answer: got %v, want not_found", err)
		}
		if _, err := o.store.ListByAttempt(o.Ctx, o.Tenant, cl.Attempt.AttemptID, nil, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant's attempt listing: got %v, want not_found", err)
		}
		if got, err := o.store.List(o.Ctx, o.Tenant, decisions.ListFilter{Limit: 10}); err != nil || len(got) != 0 {
			t.Fatalf("other tenant's inbox: %v %v", ids(got), err)
		}
		if _, err := o.store.Request(o.Ctx, o.Tenant, cl.Attempt.AttemptID, 1, decisions.Request{}); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("request on other tenant's attempt: got %v, want not_found", err)
		}
		if got := e.get(d.DecisionID); got.Status != api.DecisionPending || got.Version != d.Version {
			t.Fatalf("owner's decision changed: %+v", got)
		}
		if e.count() != 1 {
			t.Fatalf("decisions written by the other tenant")
		}
	}},
}
