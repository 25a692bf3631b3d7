package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/waits"
)

// claimOne enqueues a run of kind and claims it with c.
func (s *server) claimOne(t testing.TB, c *client.Client, kind string) *api.Claim {
	t.Helper()
	s.enqueue(t, kind)
	cl, err := c.ClaimRun(context.Background(), api.ClaimRequest{HolderID: "h", ReleaseID: testRelease,
		AdapterVersion: testAdapter, ModelProfileID: testModel, Kinds: []string{kind}})
	if err != nil || cl == nil {
		t.Fatalf("claim: %v %v", cl, err)
	}
	return cl
}

// waiting waits until the hub has n waits of k in progress (the test's sync).
func (s *server) waiting(t testing.TB, k waits.Key, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); s.App.Runs.Waits().Waiting(k) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d waits of %v, want %d", s.App.Runs.Waits().Waiting(k), k, n)
		}
	}
}

// get sends GET path with the runtime key and decodes the answer.
func (s *server) get(t testing.TB, path string, out any) (int, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.RuntimeKey)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, time.Since(start)
}

// slowPolls is a client whose own polling would wait an hour: a wait that returns within
// the test's time came from the server's answer.
var slowPolls = client.WithPolling(time.Hour, time.Hour)

// TestWaitDecisionAnswersAsTheDecisionCloses: WaitDecision holds a server wait
// (GET /v1/decisions/{id}?waitSeconds), which the answer wakes; the client never polls.
func TestWaitDecisionAnswersAsTheDecisionCloses(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	_, rt := s.newClient(t, tenancy.RoleRuntime, slowPolls)
	cl := s.claimOne(t, rt, "decide")
	ctx := context.Background()
	d, err := rt.RequestDecision(ctx, cl.Attempt.AttemptID, api.DecisionRequest{FencingToken: cl.Lease.FencingToken,
		Kind: api.Ptr(api.DecisionApproval)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan api.Decision, 1)
	go func() {
		d, err := rt.WaitDecision(ctx, d.DecisionID)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	s.waiting(t, runs.AttemptKey(s.Tenant, cl.Attempt.AttemptID), 1)
	if _, err := s.Admin.AnswerPending(ctx, d.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got, "decision"); d.Status != api.DecisionApproved {
		t.Fatalf("status %s, want approved", d.Status)
	}

	// The attempt's end closes a pending decision (cancelled), and wakes its waits too.
	d2, err := rt.RequestDecision(ctx, cl.Attempt.AttemptID, api.DecisionRequest{FencingToken: cl.Lease.FencingToken,
		Kind: api.Ptr(api.DecisionApproval)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		d, err := rt.WaitDecision(ctx, d2.DecisionID)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	s.waiting(t, runs.AttemptKey(s.Tenant, cl.Attempt.AttemptID), 1)
	if _, err := rt.CompleteAttempt(ctx, cl.Attempt.AttemptID, api.CompleteAttemptRequest{FencingToken: cl.Lease.FencingToken,
		State: api.CompleteSucceeded}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got, "decision"); d.Status != api.DecisionCancelled {
		t.Fatalf("status %s, want cancelled", d.Status)
	}
}

// TestWaitDelegationAnswersAsTheChildEnds: WaitDelegation waits on the child run
// (GET /v1/runs/{id}?waitSeconds), which the child's completion wakes.
func TestWaitDelegationAnswersAsTheChildEnds(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	_, rt := s.newClient(t, tenancy.RoleRuntime, slowPolls)
	cl := s.claimOne(t, rt, "parent")
	ctx := context.Background()
	del, err := rt.Delegate(ctx, cl.Attempt.AttemptID, api.DelegationRequest{FencingToken: cl.Lease.FencingToken,
		Purpose: "p", Child: spec("child-wait")})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan api.Delegation, 1)
	go func() {
		d, err := rt.WaitDelegation(ctx, del.DelegationID)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	s.waiting(t, runs.RunKey(s.Tenant, del.ChildRunID), 1)
	child, err := rt.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: testRelease, AdapterVersion: testAdapter,
		ModelProfileID: testModel, Kinds: []string{"child-wait"}})
	if err != nil || child == nil {
		t.Fatalf("claim the child: %v %v", child, err)
	}
	if _, err := rt.CompleteAttempt(ctx, child.Attempt.AttemptID, api.CompleteAttemptRequest{FencingToken: child.Lease.FencingToken,
		State: api.CompleteSucceeded}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got, "delegation"); d.Status != api.DelegationSucceeded {
		t.Fatalf("status %s, want succeeded", d.Status)
	}
}

// TestRunWaitAnswersAtTheEndOrTheTimeout: GET /v1/runs/{id}?waitSeconds answers when the
// run ends (a cancel of a queued run here), and a wait on a run that does not end answers
// at its timeout with the run as it is.
func TestRunWaitAnswersAtTheEndOrTheTimeout(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	r := s.enqueue(t, "wait-run")
	type answer struct {
		run    api.Run
		status int
		took   time.Duration
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		a.status, a.took = s.get(t, "/v1/runs/"+r.RunID.String()+"?waitSeconds=30", &a.run)
		got <- a
	}()
	s.waiting(t, runs.RunKey(s.Tenant, r.RunID), 1)
	if _, err := s.Admin.CancelRun(ctx, r.RunID); err != nil {
		t.Fatal(err)
	}
	a := recv(t, got, "run")
	if a.status != http.StatusOK || a.run.State != api.RunEnded || a.took > 20*time.Second {
		t.Fatalf("got %d %s after %s, want 200 ended", a.status, a.run.State, a.took)
	}

	queued := s.enqueue(t, "wait-run-2")
	var run api.Run
	status, took := s.get(t, "/v1/runs/"+queued.RunID.String()+"?waitSeconds=1", &run)
	if status != http.StatusOK || run.State != api.RunQueued || took < time.Second {
		t.Fatalf("got %d %s after %s, want 200 queued after a second", status, run.State, took)
	}
	var p api.Problem
	if status, _ := s.get(t, "/v1/runs/"+queued.RunID.String()+"?waitSeconds=31", &p); status != http.StatusBadRequest {
		t.Fatalf("waitSeconds=31: %d, want 400", status)
	}
	if status, _ := s.get(t, "/v1/decisions/"+uuid.NewString()+"?waitSeconds=5", &p); status != http.StatusNotFound {
		t.Fatalf("a missing decision: %d, want 404 at once", status)
	}
}

// TestWaitsAreCappedPerTenant: past the tenant's cap of waiting reads a wait answers at
// once with the current state, while the claims' own slots stay free.
func TestWaitsAreCappedPerTenant(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{Limits: admission.Limits{LongPolls: 1}})
	r := s.enqueue(t, "capped")
	holder := make(chan struct{})
	go func() {
		defer close(holder)
		var run api.Run
		s.get(t, "/v1/runs/"+r.RunID.String()+"?waitSeconds=30", &run)
	}()
	s.waiting(t, runs.RunKey(s.Tenant, r.RunID), 1)
	var run api.Run
	status, took := s.get(t, "/v1/runs/"+r.RunID.String()+"?waitSeconds=30", &run)
	if status != http.StatusOK || run.State != api.RunQueued || took > 15*time.Second {
		t.Fatalf("past the cap: %d %s after %s, want 200 queued at once", status, run.State, took)
	}
	// A claim that waits still gets its slot: it takes the queued run.
	cl, err := s.Runtime.ClaimRun(context.Background(), api.ClaimRequest{HolderID: "h", ReleaseID: testRelease,
		AdapterVersion: testAdapter, ModelProfileID: testModel, Kinds: []string{"capped"}, WaitSeconds: api.Ptr(5)})
	if err != nil || cl == nil {
		t.Fatalf("claim while the waits are at their cap: %v %v", cl, err)
	}
	if _, err := s.Runtime.CompleteAttempt(context.Background(), cl.Attempt.AttemptID, api.CompleteAttemptRequest{
		FencingToken: cl.Lease.FencingToken, State: api.CompleteSucceeded}); err != nil {
		t.Fatal(err)
	}
	recv(t, holder, "the first wait's answer")
}
