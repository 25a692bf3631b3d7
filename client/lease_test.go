package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// tap is a transport that counts the requests it sends and can refuse some without sending
// them (a network failure as the client sees it).
type tap struct {
	sent atomic.Int64
	mu   sync.Mutex
	fail func(*http.Request) bool
}

func (t *tap) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	fail := t.fail
	t.mu.Unlock()
	if fail != nil && fail(r) {
		return nil, errors.New("tap: connection reset")
	}
	t.sent.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func (t *tap) setFail(f func(*http.Request) bool) {
	t.mu.Lock()
	t.fail = f
	t.mu.Unlock()
}

// tapped is a runtime client of s whose requests go through a new tap.
func tapped(t *testing.T, s *server) (*client.Client, *tap) {
	tp := &tap{}
	return s.client(t, s.RuntimeKey, client.WithHTTPClient(&http.Client{Transport: tp})), tp
}

// expireAndReap moves the server's clock past every lease and past the longest backoff, and
// runs the reaper, so that leased runs are taken back and due again.
func expireAndReap(t *testing.T, s *server) {
	t.Helper()
	s.Clock.Advance(2 * time.Hour)
	res, err := s.App.Runs.Reap(context.Background())
	if err != nil || res.TakenBack == 0 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	s.Clock.Advance(11 * time.Minute) // past the backoff of the take-back
}

// A worker whose heartbeat stopped loses its run to another worker, which claims it with a
// greater fencing token and resumes from its last checkpoint; the first worker's late write
// is refused as stale, ends its handler's context with ErrLeaseLost, and reaches nothing;
// after that its Lease sends nothing at all.
func TestCrashedHolderIsFencedOutAndTheRunResumes(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	run := s.enqueue(t, "crash")

	ca, tapA := tapped(t, s)
	cfgA := workerConfig("crash")
	cfgA.HeartbeatEvery = time.Hour // the heartbeat has stopped
	resultsA := finishedHook(&cfgA)
	checkpointed := make(chan *client.Lease, 1)
	proceed := make(chan struct{})
	type late struct {
		first, second error
		cause         error
		sentBetween   int64
	}
	lateA := make(chan late, 1)
	startWorker(t, ca, cfgA, func(ctx context.Context, l *client.Lease) error {
		for _, ref := range []string{"step-0", "step-1"} {
			if _, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: ref}); err != nil {
				return err
			}
		}
		checkpointed <- l
		<-proceed
		var out late
		_, out.first = l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: "late"})
		<-ctx.Done()
		out.cause = context.Cause(ctx)
		before := tapA.sent.Load()
		_, out.second = l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: "later"})
		out.sentBetween = tapA.sent.Load() - before
		lateA <- out
		return nil
	})
	leaseA := recv(t, checkpointed, "first worker's checkpoints")

	expireAndReap(t, s)

	cfgB := workerConfig("crash")
	resultsB := finishedHook(&cfgB)
	resumedB := make(chan *api.LastCheckpoint, 1)
	startWorker(t, s.Runtime, cfgB, func(ctx context.Context, l *client.Lease) error {
		last, err := l.Resume(ctx)
		if err != nil {
			return err
		}
		resumedB <- last
		_, err = l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseFinalizing, StateRef: "step-2"})
		return err
	})
	rb := recv(t, resultsB, "second worker's result")
	if rb.Outcome != client.Succeeded {
		t.Fatalf("second worker: %+v", rb)
	}
	if rb.Lease.FencingToken() <= leaseA.FencingToken() {
		t.Fatalf("second token %d, first %d", rb.Lease.FencingToken(), leaseA.FencingToken())
	}
	last := recv(t, resumedB, "resume")
	if last == nil || last.AdapterStateRef != "step-1" || last.Sequence != 1 || last.AttemptID != leaseA.AttemptID() {
		t.Fatalf("resumed from %+v", last)
	}

	close(proceed)
	got := recv(t, lateA, "first worker's late writes")
	if !errors.Is(got.first, client.ErrStaleLease) || !errors.Is(got.first, client.ErrLeaseLost) {
		t.Fatalf("late write: %v", got.first)
	}
	if !errors.Is(got.cause, client.ErrLeaseLost) {
		t.Fatalf("first handler's context cause: %v", got.cause)
	}
	if !errors.Is(got.second, client.ErrLeaseLost) || got.sentBetween != 0 {
		t.Fatalf("write after the loss: %v, %d requests sent", got.second, got.sentBetween)
	}
	if ra := recv(t, resultsA, "first worker's result"); ra.Outcome != client.LeaseLost {
		t.Fatalf("first worker: %+v", ra)
	}

	// The database holds the first attempt's two checkpoints and the second's one: the late
	// write reached nothing.
	var n int
	s.row(t, &n, `SELECT COUNT(*) FROM Checkpoints WHERE AttemptId = ?`, leaseA.AttemptID().String())
	if n != 2 {
		t.Fatalf("first attempt has %d checkpoints, want 2", n)
	}
	s.row(t, &n, `SELECT COUNT(*) FROM Checkpoints WHERE AdapterStateRef IN ('late', 'later')`)
	if n != 0 {
		t.Fatalf("%d late checkpoints stored", n)
	}
	var seqs []int32
	for cp, err := range s.Runtime.Checkpoints(ctx, rb.Lease.AttemptID()) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, cp.Sequence)
	}
	if len(seqs) != 1 || seqs[0] != 2 {
		t.Fatalf("second attempt's sequences %v, want [2] (continuing the chain)", seqs)
	}
	a, _, err := s.Runtime.GetAttempt(ctx, leaseA.AttemptID())
	if err != nil || a.State != api.AttemptLost {
		t.Fatalf("first attempt %+v, %v", a, err)
	}
	r, err := s.Runtime.GetRun(ctx, run.RunID)
	if err != nil || r.State != api.RunEnded || *r.Outcome != api.OutcomeSucceeded {
		t.Fatalf("run %+v, %v", r, err)
	}
}

// A heartbeat refused because the lease was taken back ends the handler's context with
// ErrLeaseLost, and nothing is sent to end the attempt.
func TestHeartbeatRefusalEndsTheHandler(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	s.enqueue(t, "hb-lost")
	c, tp := tapped(t, s)
	cfg := workerConfig("hb-lost")
	results := finishedHook(&cfg)
	started := make(chan struct{})
	causes := make(chan error, 1)
	startWorker(t, c, cfg, func(ctx context.Context, l *client.Lease) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	recv(t, started, "handler start")
	expireAndReap(t, s)
	cause := recv(t, causes, "cancellation")
	if !errors.Is(cause, client.ErrLeaseLost) || !(errors.Is(cause, client.ErrLeaseExpired) || errors.Is(cause, client.ErrAttemptEnded) || errors.Is(cause, client.ErrStaleLease)) {
		t.Fatalf("cause %v", cause)
	}
	sent := tp.sent.Load()
	r := recv(t, results, "result")
	if r.Outcome != client.LeaseLost {
		t.Fatalf("result %+v", r)
	}
	if after := tp.sent.Load(); after != sent {
		t.Fatalf("%d requests sent after the loss", after-sent)
	}
}

// Renewals that keep failing end the lease when it would have passed by this machine's
// clock, even though the service never refused one.
func TestFailingRenewalsLoseTheLeaseByTheLocalClock(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	s.enqueue(t, "hb-fail")
	c, tp := tapped(t, s)
	tp.setFail(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/heartbeat") })
	cfg := workerConfig("hb-fail")
	cfg.LeaseSeconds = 1
	cfg.HeartbeatEvery = 100 * time.Millisecond
	results := finishedHook(&cfg)
	causes := make(chan error, 1)
	startWorker(t, c, cfg, func(ctx context.Context, l *client.Lease) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		_, err := l.Checkpoint(context.Background(), client.CheckpointInput{Phase: api.PhaseActing, StateRef: "x"})
		return err
	})
	if cause := recv(t, causes, "cancellation"); !errors.Is(cause, client.ErrLeaseLost) {
		t.Fatalf("cause %v", cause)
	}
	r := recv(t, results, "result")
	if r.Outcome != client.LeaseLost || !errors.Is(r.Err, client.ErrLeaseLost) {
		t.Fatalf("result %+v", r)
	}
	var n int
	s.row(t, &n, `SELECT COUNT(*) FROM Checkpoints`)
	if n != 0 {
		t.Fatalf("%d checkpoints stored after the loss", n)
	}
}

// orderedTap holds the answer of the handler's own complete until a heartbeat sent after
// that complete has been refused, so the refusal races the complete as it can in the wild.
type orderedTap struct {
	completed, refused chan struct{}
	once, once2        sync.Once
}

func (o *orderedTap) RoundTrip(r *http.Request) (*http.Response, error) {
	isComplete := strings.HasSuffix(r.URL.Path, "/complete")
	isHeartbeat := strings.HasSuffix(r.URL.Path, "/heartbeat")
	if isHeartbeat {
		select {
		case <-o.completed:
		default:
			return http.DefaultTransport.RoundTrip(r)
		}
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	switch {
	case isComplete:
		o.once.Do(func() { close(o.completed) })
		<-o.refused
	case isHeartbeat && err == nil && res.StatusCode == http.StatusConflict:
		o.once2.Do(func() { close(o.refused) })
	}
	return res, err
}

// A heartbeat refused because the handler's own complete got there first is not a loss:
// the handler's context is not cancelled and the complete stands.
func TestHeartbeatRacingTheHandlersOwnCompleteIsNotALoss(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	s.enqueue(t, "own-end")
	tp := &orderedTap{completed: make(chan struct{}), refused: make(chan struct{})}
	c := s.client(t, s.RuntimeKey, client.WithHTTPClient(&http.Client{Transport: tp}))
	cfg := workerConfig("own-end")
	results := finishedHook(&cfg)
	type end struct{ err, cause error }
	ends := make(chan end, 1)
	startWorker(t, c, cfg, func(ctx context.Context, l *client.Lease) error {
		_, err := l.Complete(ctx, api.CompleteSucceeded, api.Ptr("outcome"))
		ends <- end{err, context.Cause(ctx)}
		return err
	})
	got := recv(t, ends, "the handler's complete")
	if got.err != nil || got.cause != nil {
		t.Fatalf("complete: %v; context cause %v", got.err, got.cause)
	}
	if r := recv(t, results, "result"); r.Outcome != client.SettledByHandler {
		t.Fatalf("result %+v", r)
	}
}
