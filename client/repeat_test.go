package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// loseOnce is a transport that, when armed, sends the next matching request to the server
// and then loses its answer: the request applied, the client sees a broken connection.
type loseOnce struct {
	mu     sync.Mutex
	method string
	suffix string
	lost   int
}

func (l *loseOnce) arm(method, suffix string) {
	l.mu.Lock()
	l.method, l.suffix, l.lost = method, suffix, 0
	l.mu.Unlock()
}

func (l *loseOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	lose := l.suffix != "" && r.Method == l.method && strings.HasSuffix(r.URL.Path, l.suffix)
	if lose {
		l.suffix = ""
		l.lost++
	}
	l.mu.Unlock()
	res, err := http.DefaultTransport.RoundTrip(r)
	if lose && err == nil {
		res.Body.Close()
		return nil, errors.New("loseOnce: connection reset after the request was sent")
	}
	return res, err
}

func (l *loseOnce) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Every call the SDK retries after a lost answer is one the service answers idempotently:
// each case loses the answer of a request that applied, and the retry succeeds without
// applying twice. Calls that are not safe to repeat come back with the transport error.
func TestLostAnswersOfSafeCallsAreRetriedAndApplyOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	lose := &loseOnce{}
	fast := client.WithRetry(client.RetryPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond})
	rt := s.client(t, s.RuntimeKey, client.WithHTTPClient(&http.Client{Transport: lose}), fast)
	_, admin := s.newClient(t, tenancy.RoleAdmin, client.WithHTTPClient(&http.Client{Transport: lose}), fast)
	count := func(query string, args ...any) int {
		var n int
		s.row(t, &n, query, args...)
		return n
	}
	lease := func() *client.Lease {
		s.enqueue(t, "repeat")
		cl, err := s.Runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: testRelease, AdapterVersion: testAdapter,
			ModelProfileID: testModel, Kinds: []string{"repeat"}})
		if err != nil || cl == nil {
			t.Fatalf("claim: %v, %v", cl, err)
		}
		return client.NewLease(rt, *cl)
	}

	type check func(t *testing.T)
	cases := []struct {
		name, method, suffix string
		call                 func(t *testing.T) (check, error)
	}{
		{"AppendCheckpoint", "POST", "/checkpoints", func(t *testing.T) (check, error) {
			l := lease()
			_, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: "s"})
			return func(t *testing.T) {
				if n := count(`SELECT COUNT(*) FROM Checkpoints WHERE AttemptId = ?`, l.AttemptID().String()); n != 1 {
					t.Fatalf("%d checkpoints", n)
				}
			}, err
		}},
		{"RecordCall", "POST", "/calls", func(t *testing.T) (check, error) {
			l := lease()
			_, err := l.RecordCall(ctx, client.CallInput{Kind: api.CallModel, Target: "m"})
			return func(t *testing.T) {
				if n := count(`SELECT COUNT(*) FROM CallRecords WHERE AttemptId = ?`, l.AttemptID().String()); n != 1 {
					t.Fatalf("%d calls", n)
				}
			}, err
		}},
		{"FinishCall", "PATCH", "", func(t *testing.T) (check, error) {
			l := lease()
			c, err := l.RecordCall(ctx, client.CallInput{Kind: api.CallTool, Target: "t"})
			if err != nil {
				t.Fatal(err)
			}
			lose.arm("PATCH", "/calls/"+c.CallID.String())
			_, err = l.FinishCall(ctx, c.CallID, api.FinishSucceeded, api.Ptr("r"))
			return nil, err
		}},
		{"CompleteAttempt", "POST", "/complete", func(t *testing.T) (check, error) {
			l := lease()
			_, err := l.Complete(ctx, api.CompleteSucceeded, api.Ptr("h"))
			return func(t *testing.T) {
				r, _ := s.Runtime.GetRun(ctx, l.RunID())
				if r.State != api.RunEnded || r.Outcome == nil || *r.Outcome != api.OutcomeSucceeded {
					t.Fatalf("run %+v", r)
				}
			}, err
		}},
		{"ReleaseAttemptCharged", "POST", "/release", func(t *testing.T) (check, error) {
			l := lease()
			_, err := l.Release(ctx, true, api.Ptr(time.Hour))
			return func(t *testing.T) {
				r, _ := s.Runtime.GetRun(ctx, l.RunID())
				if r.State != api.RunQueued || r.AttemptsSpent != 1 {
					t.Fatalf("run %s with %d attempts spent, want queued with 1", r.State, r.AttemptsSpent)
				}
			}, err
		}},
		{"Heartbeat", "POST", "/heartbeat", func(t *testing.T) (check, error) {
			_, err := lease().Heartbeat(ctx)
			return nil, err
		}},
		{"SetPhase", "PATCH", "", func(t *testing.T) (check, error) {
			l := lease()
			lose.arm("PATCH", "/attempts/"+l.AttemptID().String())
			_, err := l.SetPhase(ctx, api.PhaseObserving)
			return nil, err
		}},
		{"ObserveCancellation", "POST", "/cancellation", func(t *testing.T) (check, error) {
			l := lease()
			if _, err := s.Admin.CancelRun(ctx, l.RunID()); err != nil {
				t.Fatal(err)
			}
			return nil, l.ObserveCancellation(ctx)
		}},
		{"EnqueueRunWithKey", "POST", "/v1/runs", func(t *testing.T) (check, error) {
			sp := spec("repeat-key")
			sp.IdempotencyKey = api.Ptr("key-" + uuid.NewString())
			_, err := rt.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp})
			return func(t *testing.T) {
				if n := count(`SELECT COUNT(*) FROM Runs WHERE IdempotencyKey = ?`, *sp.IdempotencyKey); n != 1 {
					t.Fatalf("%d runs", n)
				}
			}, err
		}},
		{"DelegateWithKey", "POST", "/delegations", func(t *testing.T) (check, error) {
			l := lease()
			child := spec("repeat-child")
			child.IdempotencyKey = api.Ptr("child-" + uuid.NewString())
			_, err := l.Delegate(ctx, "help", child)
			return func(t *testing.T) {
				if n := count(`SELECT COUNT(*) FROM SubAgentDelegations WHERE AttemptId = ?`, l.AttemptID().String()); n != 1 {
					t.Fatalf("%d delegations", n)
				}
			}, err
		}},
		{"ContinueRun", "POST", "/continue", func(t *testing.T) (check, error) {
			l := lease()
			if _, err := l.Complete(ctx, api.CompleteFailed, nil); err != nil {
				t.Fatal(err)
			}
			_, err := rt.ContinueRun(ctx, l.RunID(), nil)
			return func(t *testing.T) {
				if n := count(`SELECT COUNT(*) FROM Runs WHERE ContinuedFromRunId = ?`, l.RunID().String()); n != 1 {
					t.Fatalf("%d continuations", n)
				}
			}, err
		}},
		{"CancelRun", "POST", "/cancel", func(t *testing.T) (check, error) {
			_, err := admin.CancelRun(ctx, s.enqueue(t, "repeat-cancel").RunID)
			return nil, err
		}},
		{"AcquireLock", "PUT", "/tasks/t1", func(t *testing.T) (check, error) {
			_, err := rt.AcquireLock(ctx, "agent-1", "t1", api.LockRequest{HolderID: "h", TTLSeconds: 60})
			return nil, err
		}},
		{"ReleaseLock", "DELETE", "/tasks/t1", func(t *testing.T) (check, error) {
			return nil, rt.ReleaseLock(ctx, "agent-1", "t1", "h")
		}},
		{"PutReleaseCreate", "PUT", "/adapters/2.0", func(t *testing.T) (check, error) {
			refs, hash := client.ManifestOf("oci://x")
			_, _, err := rt.PutRelease(ctx, testRelease, "2.0", api.PutReleaseRequest{ManifestHash: hash, ContentRefs: refs,
				State: api.Ptr(api.ReleaseVerified)}, "")
			return nil, err
		}},
	}
	// Sequential: one armed transport.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.suffix != "" {
				lose.arm(tc.method, tc.suffix)
			}
			chk, err := tc.call(t)
			if err != nil {
				t.Fatalf("retried call failed: %v", err)
			}
			if lose.count() != 1 {
				t.Fatalf("%d answers lost, want 1: the case did not send the call it names", lose.count())
			}
			if chk != nil {
				chk(t)
			}
		})
	}

	t.Run("RequestDecisionIsNotRetried", func(t *testing.T) {
		l := lease()
		lose.arm("POST", "/decisions")
		_, err := l.RequestDecision(ctx, client.DecisionInput{Kind: api.DecisionApproval})
		var te *client.TransportError
		if !errors.As(err, &te) || lose.count() != 1 {
			t.Fatalf("err %v", err)
		}
		// It applied once: the decision is there, and there is only one.
		if n := count(`SELECT COUNT(*) FROM DecisionRequests WHERE AttemptId = ?`, l.AttemptID().String()); n != 1 {
			t.Fatalf("%d decisions", n)
		}
	})
	t.Run("AnswerDecisionReportsMaybeApplied", func(t *testing.T) {
		l := lease()
		d, err := l.RequestDecision(ctx, client.DecisionInput{Kind: api.DecisionApproval})
		if err != nil {
			t.Fatal(err)
		}
		lose.arm("POST", "/answer")
		_, err = admin.AnswerPending(ctx, d.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved})
		if !errors.Is(err, client.ErrMaybeApplied) {
			t.Fatalf("err %v", err)
		}
		got, _, err := admin.GetDecision(ctx, d.DecisionID)
		if err != nil || got.Status != api.DecisionApproved {
			t.Fatalf("decision %+v, %v", got, err)
		}
	})
}
