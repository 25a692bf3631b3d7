package delegations_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range storeCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, tgt)
			})
		}
	})
}

type storeCase struct {
	name string
	run  func(t *testing.T, tgt dbtest.Target)
}

// nothingWritten checks that a refused create left no child run and no delegation.
func (e *env) nothingWritten(runsBefore int) {
	e.T.Helper()
	if n := e.count("Runs"); n != runsBefore {
		e.T.Fatalf("%d runs written by a refused delegation", n-runsBefore)
	}
	if n := e.count("SubAgentDelegations"); n != 0 {
		e.T.Fatalf("%d delegations written by a refused delegation", n)
	}
}

var storeCases = []storeCase{
	{"CreateEnqueuesTheChildInTheSameTransaction", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("review:1")
		d := e.delegate(cl, request("review:1:security", func(s *runs.Spec) { s.Input = runs.JSONText(`{"file":"a.go"}`) }))
		if d.Status != api.DelegationPending || d.Depth != 1 || d.AttemptID != cl.Attempt.AttemptID ||
			d.ChildAgentID != childAgent || d.Purpose != "review the diff" || !d.CreatedAt.Equal(epoch) || d.Version == 0 {
			t.Fatalf("delegation %+v", d)
		}
		child, err := e.Svc.Get(e.Ctx, e.Tenant, d.ChildRunID)
		if err != nil {
			t.Fatal(err)
		}
		if child.State != api.RunQueued || !child.ParentRunID.Valid || child.ParentRunID.UUID != cl.Run.RunID || child.Depth != 1 ||
			child.Subject != "review:1:security" || child.AgentID != childAgent || child.CreatedBy != "runtime-key" ||
			string(child.Input) != `{"file":"a.go"}` {
			t.Fatalf("child run %+v", child)
		}
		if got := e.get(d.DelegationID); got != d {
			t.Fatalf("read back %+v, want %+v", got, d)
		}
		list, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 10)
		if err != nil || len(list) != 1 || list[0] != d {
			t.Fatalf("attempt's delegations %+v %v", list, err)
		}
	}},
	{"StatusFollowsTheChildToSuccess", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		d := e.delegate(e.parent("p"), request("c"))
		child := e.claim(childAgent)
		if child.Run.RunID != d.ChildRunID {
			t.Fatalf("claimed %s, want the child %s", child.Run.RunID, d.ChildRunID)
		}
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(child, api.AttemptSucceeded)
		e.wantStatus(&d, api.DelegationSucceeded)
	}},
	{"StatusFollowsTheChildToFailure", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		d := e.delegate(e.parent("p"), request("c"))
		child := e.claim(childAgent)
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(child, api.AttemptFailed)
		e.wantStatus(&d, api.DelegationFailed)
	}},
	{"CancelledChildCancelsTheDelegation", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		queued := e.delegate(cl, request("c1"))
		if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, queued.ChildRunID); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&queued, api.DelegationCancelled)

		leased := e.delegate(cl, request("c2"))
		child := e.claim(childAgent)
		e.wantStatus(&leased, api.DelegationRunning)
		if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, leased.ChildRunID); err != nil {
			t.Fatal(err)
		}
		if got := e.get(leased.DelegationID); got.Status != api.DelegationRunning || got.Version != leased.Version {
			t.Fatalf("a cancel request alone moved the delegation: %+v", got)
		}
		e.complete(child, api.AttemptCancelled)
		e.wantStatus(&leased, api.DelegationCancelled)
	}},
	{"ReaperTakeBackAndReleaseRequeueTheDelegation", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt, func(c *runs.Config) { c.LeaseTTL = time.Hour })
		d := e.delegate(e.parent("p"), request("c", func(s *runs.Spec) { s.MaxAttempts = 2 }))
		child, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
			ModelProfileID: "m", AgentIDs: []string{childAgent}, LeaseSeconds: 10})
		if err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationRunning)
		if _, err := e.Svc.Release(e.Ctx, e.Tenant, child.Attempt.AttemptID, child.Lease.FencingToken,
			runs.Release{RetryAfter: ptr(time.Duration(0))}); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationPending)
		if _, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
			ModelProfileID: "m", AgentIDs: []string{childAgent}, LeaseSeconds: 10}); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationRunning)
		// The lease lapses: the reaper takes the child back (a lost lease spends an attempt).
		e.Clock.Advance(11 * time.Second)
		if _, err := e.Svc.Reap(e.Ctx); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationPending)
		e.Clock.Advance(time.Hour) // past the backoff
		if _, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
			ModelProfileID: "m", AgentIDs: []string{childAgent}, LeaseSeconds: 10}); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationRunning)
		// Lost again at its attempt limit: the child ends exhausted, the delegation failed.
		e.Clock.Advance(11 * time.Second)
		if _, err := e.Svc.Reap(e.Ctx); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationFailed)
		if run, _ := e.Svc.Get(e.Ctx, e.Tenant, d.ChildRunID); run.Outcome == nil || *run.Outcome != api.OutcomeExhausted {
			t.Fatalf("child run %+v, want ended exhausted", run)
		}
	}},
	{"AContinuedChildHandsTheStatusToItsContinuation", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		d := e.delegate(e.parent("p"), request("c"))
		first := e.claim(childAgent)
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(first, api.AttemptFailed)
		e.wantStatus(&d, api.DelegationFailed)

		second, created, err := e.Svc.Continue(e.Ctx, e.Caller, d.ChildRunID, runs.Continuation{})
		if err != nil || !created {
			t.Fatalf("continue: %v", err)
		}
		e.wantStatus(&d, api.DelegationPending)
		cl := e.claim(childAgent)
		if cl.Run.RunID != second.RunID {
			t.Fatalf("claimed %s, want the continuation %s", cl.Run.RunID, second.RunID)
		}
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(cl, api.AttemptFailed)
		e.wantStatus(&d, api.DelegationFailed)

		// Two links up: the continuation of the continuation still finds the delegation.
		third, _, err := e.Svc.Continue(e.Ctx, e.Caller, second.RunID, runs.Continuation{})
		if err != nil {
			t.Fatal(err)
		}
		e.wantStatus(&d, api.DelegationPending)
		cl = e.claim(childAgent)
		if cl.Run.RunID != third.RunID {
			t.Fatalf("claimed %s, want the second continuation", cl.Run.RunID)
		}
		e.wantStatus(&d, api.DelegationRunning)
		e.complete(cl, api.AttemptSucceeded)
		e.wantStatus(&d, api.DelegationSucceeded)
		if got := e.get(d.DelegationID); got.ChildRunID != second.ContinuedFromRunID.UUID {
			t.Fatalf("the delegation's child run changed to %s", got.ChildRunID)
		}
	}},
	{"UnchangedStatusKeepsTheVersion", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		d := e.delegate(e.parent("p"), request("c"))
		child, err := e.Svc.Get(e.Ctx, e.Tenant, d.ChildRunID)
		if err != nil {
			t.Fatal(err)
		}
		// The hook told again about the same queued run changes nothing.
		err = e.DB.Write(e.Ctx, sqldb.TenantScope(e.Tenant), func(tx *sqldb.Tx) error {
			return delegations.Hooks().RunChanged(e.Ctx, tx, child)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.get(d.DelegationID); got.Version != d.Version || got.Status != api.DelegationPending {
			t.Fatalf("a repeated run change restamped the delegation: %+v (was %+v)", got, d)
		}
		// Runs that are no delegated child pass through the hook untouched.
		root := e.enqueue(spec("plain", parentAgent))
		e.enqueue(spec("plain-child", "plain-agent", func(s *runs.Spec) { s.ParentRunID = &root.RunID }))
		e.complete(e.claim("plain-agent"), api.AttemptSucceeded)
		if got := e.get(d.DelegationID); e.count("SubAgentDelegations") != 1 || got.Version != d.Version {
			t.Fatalf("a plain child run changed delegations: %+v", got)
		}
	}},
	{"ChildOnTheParentsSubjectIsASubjectConflict", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("review:7")
		before := e.count("Runs")
		_, _, err := e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, request("review:7"))
		if !apperr.Is(err, api.CodeSubjectConflict) {
			t.Fatalf("got %v, want subject_conflict", err)
		}
		e.nothingWritten(before)
		// Subjects compare exactly: another spelling is another subject.
		e.delegate(cl, request("Review:7"))
	}},
	{"LoopDepthThroughADelegationChain", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt, func(c *runs.Config) { c.MaxDepth = 1 })
		d := e.delegate(e.parent("root"), request("child"))
		if d.Depth != 1 {
			t.Fatalf("child depth %d", d.Depth)
		}
		child := e.claim(childAgent)
		before := e.count("Runs")
		_, _, err := e.store.Create(e.Ctx, e.Caller, child.Attempt.AttemptID, child.Lease.FencingToken, request("grandchild"))
		if !apperr.Is(err, api.CodeLoopDepth) {
			t.Fatalf("got %v, want loop_depth", err)
		}
		if n := e.count("Runs"); n != before {
			t.Fatalf("%d runs written past the depth limit", n-before)
		}
		if n := e.count("SubAgentDelegations"); n != 1 {
			t.Fatalf("%d delegations, want only the first", n)
		}
	}},
	{"StaleFenceWritesNothing", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		before := e.count("Runs")
		_, _, err := e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken+1, request("c"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("stale token: got %v, want stale_lease", err)
		}
		_, _, err = e.store.Create(e.Ctx, e.Caller, uuid.New(), 1, request("c"))
		if !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
		_, _, err = e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			request("c", func(s *runs.Spec) { s.ProjectID = "nope" }))
		if !apperr.Is(err, api.CodeUnknownProject) {
			t.Fatalf("unknown child project: got %v, want unknown_project", err)
		}
		e.Clock.Advance(31 * time.Second)
		_, _, err = e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, request("c"))
		if !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("expired lease: got %v, want lease_expired", err)
		}
		e.nothingWritten(before)
	}},
	{"IdempotencyKeyRepeatsTheDelegation", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		key := "delegate:p:security"
		first := request("c", func(s *runs.Spec) { s.IdempotencyKey = &key })
		withKey := func(subject string) delegations.Request {
			r := first
			r.Child.Subject = subject
			return r
		}
		d := e.delegate(cl, withKey("c"))
		again, created, err := e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, withKey("c"))
		if err != nil || created || again != d {
			t.Fatalf("repeat: created=%v err=%v %+v, want the first delegation", created, err, again)
		}
		// The same key for another child request is a reused key, not a repeat.
		_, _, err = e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, withKey("other-subject"))
		if !apperr.Is(err, api.CodeIdempotencyKeyReused) {
			t.Fatalf("key reused for another child: got %v, want idempotency_key_reused", err)
		}
		// A repeat presented with another token is refused as the fence refuses.
		_, _, err = e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken+5, withKey("c"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("repeat with a stale token: got %v, want stale_lease", err)
		}
		// A later attempt of the same parent run (the first gave its lease back) gets it too.
		if _, err := e.Svc.Release(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			runs.Release{RetryAfter: ptr(time.Duration(0))}); err != nil {
			t.Fatal(err)
		}
		cl2 := e.claim(parentAgent)
		if cl2.Run.RunID != cl.Run.RunID {
			t.Fatalf("reclaimed %s, want the parent", cl2.Run.RunID)
		}
		again, created, err = e.store.Create(e.Ctx, e.Caller, cl2.Attempt.AttemptID, cl2.Lease.FencingToken, withKey("c"))
		if err != nil || created || again.DelegationID != d.DelegationID || again.AttemptID != cl.Attempt.AttemptID {
			t.Fatalf("repeat from the next attempt: created=%v err=%v %+v", created, err, again)
		}
		if n := e.count("SubAgentDelegations"); n != 1 {
			t.Fatalf("%d delegations, want 1", n)
		}
		// A key that names a plain run, or another run's child, cannot be this run's
		// delegation: the child request differs from the stored run's (its parent, at least).
		plainKey := "plain-run"
		e.enqueue(spec("plain", "someone", func(s *runs.Spec) { s.IdempotencyKey = &plainKey }))
		_, _, err = e.store.Create(e.Ctx, e.Caller, cl2.Attempt.AttemptID, cl2.Lease.FencingToken,
			request("c2", func(s *runs.Spec) { s.IdempotencyKey = &plainKey }))
		if !apperr.Is(err, api.CodeIdempotencyKeyReused) {
			t.Fatalf("key of a plain run: got %v, want idempotency_key_reused", err)
		}
		e.enqueue(spec("p2", parentAgent))
		other := e.claim(parentAgent)
		_, _, err = e.store.Create(e.Ctx, e.Caller, other.Attempt.AttemptID, other.Lease.FencingToken, withKey("c"))
		if !apperr.Is(err, api.CodeIdempotencyKeyReused) {
			t.Fatalf("key of another run's child: got %v, want idempotency_key_reused", err)
		}
		if n := e.count("SubAgentDelegations"); n != 1 {
			t.Fatalf("%d delegations after refused repeats, want 1", n)
		}
	}},
	{"ConcurrentRepeatsMakeOneDelegation", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		key := "once"
		const n = 8
		type result struct {
			d       delegations.Delegation
			created bool
			err     error
		}
		results := make(chan result, n)
		var wg sync.WaitGroup
		req := request("c", func(s *runs.Spec) { s.IdempotencyKey = &key })
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, created, err := e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, req)
				results <- result{d, created, err}
			}()
		}
		wg.Wait()
		close(results)
		created := 0
		var id uuid.UUID
		for r := range results {
			if r.err != nil {
				t.Fatalf("create: %v", r.err)
			}
			if r.created {
				created++
			}
			if id == uuid.Nil {
				id = r.d.DelegationID
			}
			if r.d.DelegationID != id {
				t.Fatalf("two delegations for one key: %s and %s", id, r.d.DelegationID)
			}
		}
		if created != 1 || e.count("SubAgentDelegations") != 1 {
			t.Fatalf("%d creates reported, %d delegations stored; want 1 and 1", created, e.count("SubAgentDelegations"))
		}
	}},
	{"ListByAttemptPagesInCreationOrder", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		var ds []delegations.Delegation
		for _, s := range []string{"a", "b", "c"} {
			ds = append(ds, e.delegate(cl, request(s)))
			e.Clock.Advance(time.Second)
		}
		first, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 2)
		if err != nil || len(first) != 2 || first[0].DelegationID != ds[0].DelegationID || first[1].DelegationID != ds[1].DelegationID {
			t.Fatalf("first page %+v %v", first, err)
		}
		rest, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID,
			&delegations.Position{CreatedAt: first[1].CreatedAt, DelegationID: first[1].DelegationID}, 2)
		if err != nil || len(rest) != 1 || rest[0].DelegationID != ds[2].DelegationID {
			t.Fatalf("second page %+v %v", rest, err)
		}
		if _, err := e.store.ListByAttempt(e.Ctx, e.Tenant, uuid.New(), nil, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
	}},
	{"OtherTenantSeesNothing", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		cl := e.parent("p")
		d := e.delegate(cl, request("c"))
		o := e.other()
		if _, err := o.store.Get(o.Ctx, o.Tenant, d.DelegationID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant's read: got %v, want not_found", err)
		}
		if _, err := o.store.ListByAttempt(o.Ctx, o.Tenant, cl.Attempt.AttemptID, nil, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant's listing: got %v, want not_found", err)
		}
		_, _, err := o.store.Create(o.Ctx, o.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, request("x"))
		if !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("create on other tenant's attempt: got %v, want not_found", err)
		}
		if n := o.count("Runs"); n != 0 {
			t.Fatalf("the other tenant's refused create wrote %d runs", n)
		}
		// The other tenant may use the same idempotency key: keys are per tenant.
		key := "shared-key"
		e.delegate(cl, request("k", func(s *runs.Spec) { s.IdempotencyKey = &key }))
		ocl := o.parent("p")
		od, created, err := o.store.Create(o.Ctx, o.Caller, ocl.Attempt.AttemptID, ocl.Lease.FencingToken,
			request("k", func(s *runs.Spec) { s.IdempotencyKey = &key }))
		if err != nil || !created || od.TenantID != o.Tenant {
			t.Fatalf("other tenant's own delegation with the same key: created=%v err=%v", created, err)
		}
	}},
}
