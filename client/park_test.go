package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// A Worker stopping (what SIGTERM does to examples/worker) while its handler waits on a
// decision parks the run instead of releasing it: the decision stays pending and
// answerable, no attempt is spent, the answer makes the run due at once, and the resumed
// handler's same Decide call returns the answer without asking again.
func TestDecideParksOnShutdownAndResumesWithTheAnswer(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	run := s.enqueue(t, "park-stop")
	asked := make(chan api.Decision, 1)
	results := make(chan error, 2)
	handler := func(ctx context.Context, l *client.Lease) error {
		d, err := l.Decide(ctx, client.DecisionInput{Kind: api.DecisionApproval, Key: "merge"})
		if errors.Is(err, client.ErrParked) {
			results <- err
			return err
		}
		if err != nil {
			return err
		}
		asked <- d
		return nil
	}
	stop := startWorker(t, s.Runtime, workerConfig("park-stop"), handler)
	var pending api.Decision
	deadline := time.Now().Add(time.Minute)
	for {
		page, err := s.Admin.ListRunDecisions(context.Background(), run.RunID, api.PageParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 1 {
			pending = page.Items[0].Decision
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision asked within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("worker stop: %v", err)
	}
	if err := recv(t, results, "handler end"); !errors.Is(err, client.ErrParked) {
		t.Fatalf("handler ended with %v, want ErrParked", err)
	}
	got, _, err := s.Admin.GetDecision(context.Background(), pending.DecisionID)
	if err != nil || got.Status != api.DecisionPending {
		t.Fatalf("decision after the worker stopped: %+v %v", got.Status, err)
	}
	r, err := s.Admin.GetRun(context.Background(), run.RunID)
	if err != nil || r.State != api.RunQueued || r.AttemptsSpent != run.AttemptsSpent {
		t.Fatalf("run after the worker stopped: %s attempt %d (was %d) %v", r.State, r.AttemptsSpent, run.AttemptsSpent, err)
	}
	if _, err := s.Admin.AnswerPending(context.Background(), pending.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, s.Runtime, workerConfig("park-stop"), handler)
	d := recv(t, asked, "the resumed handler's answer")
	if d.DecisionID != pending.DecisionID || d.Status != api.DecisionApproved {
		t.Fatalf("resumed Decide: %+v", d)
	}
	page, err := s.Admin.ListRunDecisions(context.Background(), run.RunID, api.PageParams{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("the run asked %d decisions (%v), want 1", len(page.Items), err)
	}
}

// Past the park bound Decide parks without a shutdown, and the Worker reports Parked.
func TestDecideParksPastItsBound(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	run := s.enqueue(t, "park-bound")
	ended := make(chan error, 1)
	cfg := workerConfig("park-bound")
	cfg.ParkAfter = 50 * time.Millisecond
	startWorker(t, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
		_, err := l.Decide(ctx, client.DecisionInput{Kind: api.DecisionApproval})
		ended <- err
		return err
	})
	if err := recv(t, ended, "handler end"); !errors.Is(err, client.ErrParked) {
		t.Fatalf("Decide past its bound: %v, want ErrParked", err)
	}
	attempts, err := s.Admin.ListAttempts(context.Background(), api.ListAttemptsParams{RunID: &run.RunID})
	if err != nil || len(attempts.Items) != 1 || attempts.Items[0].State != api.AttemptParked {
		t.Fatalf("attempts: %+v %v", attempts.Items, err)
	}
}

// A parent that delegates with DelegateStep and waits with WaitChildren parks past the
// bound; its child's end makes it due, and the resumed handler's DelegateStep repeats the
// same request exactly (the same child, no second delegation) and WaitChildren answers at
// once.
func TestWaitChildrenParksAndTheResumedDelegationRepeatsExactly(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	sp := spec("park-parent")
	parent, err := s.Runtime.EnqueueRun(context.Background(), api.EnqueueRequest{RunSpec: sp})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		child  uuid.UUID
		parked bool
		ended  []api.Run
	}
	// The same child request on every try (a resumed handler builds the same spec);
	// DelegateStep derives its stepId and snapshotId.
	child := spec("park-child")
	child.StepID, child.SnapshotID = uuid.Nil, uuid.Nil
	seens := make(chan seen, 4)
	childMayEnd := make(chan struct{})
	cfg := workerConfig("park-parent")
	cfg.Kinds = []string{"park-parent", "park-child"}
	cfg.Concurrency = 2
	cfg.ParkAfter = 50 * time.Millisecond
	startWorker(t, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
		if l.Run().Kind == "park-child" {
			select { // the child ends only once the parent has parked
			case <-childMayEnd:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		d, err := l.DelegateStep(ctx, "review", "look", child)
		if err != nil {
			return err
		}
		ended, err := l.WaitChildren(ctx, d.ChildRunID)
		seens <- seen{child: d.ChildRunID, parked: errors.Is(err, client.ErrParked), ended: ended}
		return err
	})
	first := recv(t, seens, "the parent's first wait")
	if !first.parked {
		t.Fatalf("the parent's wait past its bound did not park: %+v", first)
	}
	close(childMayEnd)
	second := recv(t, seens, "the resumed parent")
	if second.parked || len(second.ended) != 1 || second.ended[0].State != api.RunEnded || second.child != first.child {
		t.Fatalf("first %+v, resumed %+v", first, second)
	}
	dels, err := s.Admin.ListDelegations(context.Background(), mustAttempt(t, s, parent.RunID), api.PageParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dels.Items) != 1 {
		t.Fatalf("%d delegations from the first attempt, want 1", len(dels.Items))
	}
	r, err := s.Admin.WaitRun(context.Background(), parent.RunID)
	if err != nil || r.Outcome == nil || *r.Outcome != api.OutcomeSucceeded || r.AttemptsSpent != 0 {
		t.Fatalf("parent: %+v %v", r, err)
	}
}

// mustAttempt is the run's first attempt.
func mustAttempt(t *testing.T, s *server, runID uuid.UUID) uuid.UUID {
	t.Helper()
	page, err := s.Admin.ListAttempts(context.Background(), api.ListAttemptsParams{RunID: &runID})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("attempts of %s: %v", runID, err)
	}
	return page.Items[len(page.Items)-1].AttemptID
}
