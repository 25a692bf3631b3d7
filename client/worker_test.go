package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// finishedHook sends every Result of a worker to the returned channel.
func finishedHook(cfg *client.WorkerConfig) <-chan client.Result {
	ch := make(chan client.Result, 16)
	cfg.Hooks.Finished = func(r client.Result) { ch <- r }
	return ch
}

// answerNextDecision waits for the next pending decision of the inbox and answers it.
func answerNextDecision(t *testing.T, s *server, answer api.AnswerDecisionRequest) api.Decision {
	t.Helper()
	ctx := context.Background()
	for {
		for d, err := range s.Admin.Decisions(ctx, api.ListDecisionsParams{Status: api.Ptr(api.DecisionPending)}) {
			if err != nil {
				t.Fatalf("inbox: %v", err)
			}
			out, err := s.Admin.AnswerPending(ctx, d.DecisionID, answer)
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			return out
		}
		if err := client.Sleep(ctx, 5e6); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWorkerRunsARunsWholeLife(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	run, err := s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: func() api.RunSpec {
		sp := spec("life")
		sp.Input = json.RawMessage(`{"pr":42}`)
		return sp
	}()})
	if err != nil {
		t.Fatal(err)
	}

	// A worker for the child runs the parent delegates to.
	childCfg := workerConfig("child")
	startWorker(t, s.Runtime, childCfg, func(ctx context.Context, l *client.Lease) error {
		_, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseFinalizing, StateRef: "child-done"})
		return err
	})

	cfg := workerConfig("life")
	results := finishedHook(&cfg)
	decided := make(chan api.Decision, 1)
	startWorker(t, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
		if string(l.Input()) != `{"pr":42}` {
			return client.Permanent(fmt.Errorf("input %s", l.Input()))
		}
		last, err := l.Resume(ctx)
		if err != nil || last != nil {
			return client.Permanent(fmt.Errorf("resume of a fresh run: %v, %v", last, err))
		}
		if _, err := l.SetPhase(ctx, api.PhasePlanning); err != nil {
			return err
		}
		if _, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhasePlanning, StateRef: "plan"}); err != nil {
			return err
		}
		if err := l.Call(ctx, client.CallInput{Kind: api.CallTool, Target: "github.get_pr"}, func(context.Context) (string, error) {
			return "receipt-1", nil
		}); err != nil {
			return err
		}
		d, err := l.Decide(ctx, client.DecisionInput{Kind: api.DecisionApproval, Recommendation: api.Ptr("merge")})
		if err != nil {
			return err
		}
		decided <- d
		del, err := l.Delegate(ctx, "review the tests", func() api.RunSpec {
			c := spec("child")
			c.IdempotencyKey = api.Ptr("child-of-" + l.RunID().String())
			return c
		}())
		if err != nil {
			return err
		}
		if del, err = l.WaitDelegation(ctx, del.DelegationID); err != nil {
			return err
		}
		if del.Status != api.DelegationSucceeded {
			return client.Permanent(fmt.Errorf("child ended %s", del.Status))
		}
		_, err = l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseFinalizing, StateRef: "done"})
		return err
	})

	answered := answerNextDecision(t, s, api.AnswerDecisionRequest{Status: api.AnswerApproved})
	if d := recv(t, decided, "decision answer"); d.DecisionID != answered.DecisionID || d.Status != api.DecisionApproved {
		t.Fatalf("handler saw %+v, the admin answered %+v", d, answered)
	}
	r := recv(t, results, "result")
	if r.Outcome != client.Succeeded || r.Err != nil || r.SettleErr != nil {
		t.Fatalf("result %+v", r)
	}

	got, err := s.Runtime.GetRun(ctx, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != api.RunEnded || got.Outcome == nil || *got.Outcome != api.OutcomeSucceeded {
		t.Fatalf("run %+v", got)
	}
	var attempts []api.AttemptItem
	for a, err := range s.Runtime.Attempts(ctx, api.ListAttemptsParams{RunID: &run.RunID}) {
		if err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, a)
	}
	if len(attempts) != 1 || attempts[0].State != api.AttemptSucceeded {
		t.Fatalf("attempts %+v", attempts)
	}
	var seqs []int32
	for cp, err := range s.Runtime.Checkpoints(ctx, attempts[0].AttemptID) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, cp.Sequence)
	}
	if fmt.Sprint(seqs) != "[0 1]" {
		t.Fatalf("checkpoint sequences %v", seqs)
	}
	var calls []api.Call
	for c, err := range s.Runtime.Calls(ctx, attempts[0].AttemptID) {
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	if len(calls) != 1 || calls[0].Status != api.CallSucceeded || calls[0].ReceiptRef == nil || *calls[0].ReceiptRef != "receipt-1" {
		t.Fatalf("calls %+v", calls)
	}
	kinds := map[api.TimelineKind]int{}
	for e, err := range s.Runtime.TimelineEntries(ctx, attempts[0].AttemptID) {
		if err != nil {
			t.Fatal(err)
		}
		kinds[e.Kind]++
	}
	if kinds[api.TimelineCheckpoint] != 2 || kinds[api.TimelineCall] != 1 || kinds[api.TimelineDecision] != 1 || kinds[api.TimelineDelegation] != 1 {
		t.Fatalf("timeline kinds %v", kinds)
	}
}
