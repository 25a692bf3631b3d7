package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ledger-dev/ledger/internal/syncbuf"
	"io"
	"io/fs"
	"log/slog"
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

// An admin's cancel reaches the handler as ErrCancelRequested at the next heartbeat; the
// worker acknowledges it and completes the attempt as cancelled.
func TestCancelRequestEndsTheHandlerAndCompletesCancelled(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	run := s.enqueue(t, "cancel")
	cfg := workerConfig("cancel")
	results := finishedHook(&cfg)
	started := make(chan struct{})
	causes := make(chan error, 1)
	startWorker(t, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		// The lease still takes a last checkpoint.
		_, err := l.Checkpoint(context.WithoutCancel(ctx), client.CheckpointInput{Phase: api.PhaseFinalizing, StateRef: "stopped"})
		return err
	})
	recv(t, started, "handler start")
	if _, err := s.Admin.CancelRun(context.Background(), run.RunID); err != nil {
		t.Fatal(err)
	}
	if cause := recv(t, causes, "cancellation"); !errors.Is(cause, client.ErrCancelRequested) {
		t.Fatalf("cause %v", cause)
	}
	r := recv(t, results, "result")
	if r.Outcome != client.Cancelled || r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	a, _, err := s.Runtime.GetAttempt(context.Background(), r.Lease.AttemptID())
	if err != nil || a.State != api.AttemptCancelled || a.CancellationObservedAt == nil {
		t.Fatalf("attempt %+v, %v", a, err)
	}
	got, err := s.Runtime.GetRun(context.Background(), run.RunID)
	if err != nil || got.Outcome == nil || *got.Outcome != api.OutcomeCancelled {
		t.Fatalf("run %+v, %v", got, err)
	}
}

// The handler's return decides the end of the attempt.
func TestHandlerReturnDecidesTheEnd(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	// Runs given back are due an hour later, or after the service's backoff: the clock
	// stands still, so the worker does not claim them again.
	hour := time.Hour
	cases := []struct {
		name       string
		handler    client.Handler
		onError    func(*client.Lease, error) client.Retry
		outcome    client.Outcome
		state      api.RunState
		runOutcome api.RunOutcome
		spent      int
		dueIn      time.Duration
		// errCode and errMessage are the error the run shows (issue 29: the Worker sends it).
		errCode, errMessage string
	}{
		{name: "NilCompletesSucceeded", handler: func(context.Context, *client.Lease) error { return nil },
			outcome: client.Succeeded, state: api.RunEnded, runOutcome: api.OutcomeSucceeded},
		{name: "PermanentCompletesFailed", handler: func(context.Context, *client.Lease) error { return client.Permanent(errors.New("bad input")) },
			outcome: client.Failed, state: api.RunEnded, runOutcome: api.OutcomeFailed, errCode: "error", errMessage: "bad input"},
		{name: "PermanentCarriesItsCausesType", handler: func(context.Context, *client.Lease) error {
			return client.Permanent(fmt.Errorf("load config: %w", &fs.PathError{Op: "open", Path: "/etc/agent", Err: fs.ErrNotExist}))
		}, outcome: client.Failed, state: api.RunEnded, runOutcome: api.OutcomeFailed, errCode: "fs.patherror",
			errMessage: "load config: open /etc/agent: file does not exist"},
		{name: "ErrorReleasesCharged", handler: func(context.Context, *client.Lease) error { return errors.New("flaky tool") },
			outcome: client.Released, state: api.RunQueued, spent: 1, errCode: "error", errMessage: "flaky tool"},
		{name: "ErrorCoderNamesItsCode", handler: func(context.Context, *client.Lease) error { return codedError{} },
			outcome: client.Released, state: api.RunQueued, spent: 1, errCode: "tool_timeout", errMessage: "the search tool timed out"},
		{name: "RetryAfterReleasesChargedWithItsDelay", handler: func(context.Context, *client.Lease) error {
			return client.RetryAfter(errors.New("rate limited upstream"), time.Hour)
		}, outcome: client.Released, state: api.RunQueued, spent: 1, dueIn: time.Hour, errCode: "error", errMessage: "rate limited upstream"},
		{name: "OnErrorMayReleaseUncharged", handler: func(context.Context, *client.Lease) error { return errors.New("not mine") },
			onError: func(*client.Lease, error) client.Retry { return client.Retry{After: &hour} },
			outcome: client.Released, state: api.RunQueued, spent: 0, dueIn: time.Hour, errCode: "error", errMessage: "not mine"},
		{name: "PanicReleasesCharged", handler: func(context.Context, *client.Lease) error { panic("boom") },
			outcome: client.Released, state: api.RunQueued, spent: 1, errCode: "panic", errMessage: "boom"},
		{name: "HandlerMayCompleteItself", handler: func(ctx context.Context, l *client.Lease) error {
			_, err := l.Complete(ctx, api.CompleteSucceeded, api.Ptr("outcome-hash"))
			return err
		}, outcome: client.SettledByHandler, state: api.RunEnded, runOutcome: api.OutcomeSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind := "end-" + tc.name
			run := s.enqueue(t, kind)
			cfg := workerConfig(kind)
			cfg.OnError = tc.onError
			results := finishedHook(&cfg)
			panics := make(chan any, 1)
			cfg.Hooks.Panicked = func(_ *client.Lease, v any, _ []byte) { panics <- v }
			stop := startWorker(t, s.Runtime, cfg, tc.handler)
			r := recv(t, results, "result")
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tc.outcome || r.SettleErr != nil {
				t.Fatalf("result %+v", r)
			}
			if tc.name == "PanicReleasesCharged" {
				if v := recv(t, panics, "panic hook"); v != "boom" {
					t.Fatalf("panic hook got %v", v)
				}
			}
			got, err := s.Runtime.GetRun(context.Background(), run.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state || got.AttemptsSpent != tc.spent {
				t.Fatalf("run state %s, attempts spent %d; want %s, %d", got.State, got.AttemptsSpent, tc.state, tc.spent)
			}
			if tc.dueIn > 0 && !got.DueAt.Equal(s.Clock.Now().Add(tc.dueIn)) {
				t.Fatalf("run due at %s, want %s", got.DueAt, s.Clock.Now().Add(tc.dueIn))
			}
			if tc.state == api.RunEnded && (got.Outcome == nil || *got.Outcome != tc.runOutcome) {
				t.Fatalf("run outcome %v, want %s", got.Outcome, tc.runOutcome)
			}
			if code, msg := deref(got.ErrorCode), deref(got.ErrorMessage); code != tc.errCode || msg != tc.errMessage {
				t.Fatalf("run error %q %q, want %q %q", code, msg, tc.errCode, tc.errMessage)
			}
			a, _, err := s.Runtime.GetAttempt(context.Background(), r.Lease.AttemptID())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.errCode == "" && a.Error != nil:
				t.Fatalf("attempt error %+v, want none", a.Error)
			case tc.errCode == "panic" && (a.Error == nil || !strings.Contains(string(a.Error.Details), "worker_test.go")):
				t.Fatalf("a panic's details %s, want its stack", a.Error.Details)
			}
		})
	}
}

// Shutdown stops claiming, gives running handlers the grace, then ends their contexts with
// ErrShutdown and releases their leases uncharged; the handler can write nothing after.
func TestShutdownReleasesRunningLeasesUncharged(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	run := s.enqueue(t, "shutdown")
	cfg := workerConfig("shutdown")
	cfg.ShutdownGrace = 10 * time.Millisecond
	results := finishedHook(&cfg)
	started := make(chan struct{})
	type seen struct{ cause, write error }
	seenCh := make(chan seen, 1)
	stop := startWorker(t, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
		close(started)
		<-ctx.Done() // a handler that only stops when told
		var out seen
		out.cause = context.Cause(ctx)
		_, out.write = l.Checkpoint(context.Background(), client.CheckpointInput{Phase: api.PhaseActing, StateRef: "after"})
		seenCh <- out
		return ctx.Err()
	})
	recv(t, started, "handler start")
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := recv(t, seenCh, "handler end")
	if !errors.Is(got.cause, client.ErrShutdown) || !errors.Is(got.write, client.ErrShutdown) {
		t.Fatalf("cause %v, write %v", got.cause, got.write)
	}
	if r := recv(t, results, "result"); r.Outcome != client.ShutdownReleased {
		t.Fatalf("result %+v", r)
	}
	r, err := s.Runtime.GetRun(context.Background(), run.RunID)
	if err != nil || r.State != api.RunQueued || r.AttemptsSpent != 0 {
		t.Fatalf("run %+v, %v: want queued with no attempt spent", r, err)
	}
	var n int
	s.row(t, &n, `SELECT COUNT(*) FROM Checkpoints`)
	if n != 0 {
		t.Fatalf("%d checkpoints stored after the shutdown", n)
	}
}

// A claim held back by the tenant's budget waits the Retry-After the service gave before
// the slot claims again.
func TestBudgetHoldIsHonoured(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	if err := s.App.Keys.SetMaxLeased(context.Background(), s.Tenant, 1); err != nil {
		t.Fatal(err)
	}
	c := s.client(t, s.RuntimeKey)
	var holding atomic.Bool
	waits := make(chan time.Duration, 1)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		if holding.CompareAndSwap(true, false) {
			waits <- d
		}
		return client.Sleep(ctx, min(d, 10*time.Millisecond))
	})
	first, second := s.enqueue(t, "budget"), s.enqueue(t, "budget")
	cfg := workerConfig("budget")
	cfg.Concurrency = 2
	results := finishedHook(&cfg)
	helds := make(chan time.Duration, 1)
	cfg.Hooks.Held = func(d time.Duration) {
		holding.Store(true)
		select {
		case helds <- d:
		default:
		}
	}
	release := make(chan struct{})
	startWorker(t, c, cfg, func(ctx context.Context, l *client.Lease) error {
		if l.RunID() == first.RunID {
			<-release
		}
		return nil
	})
	ra := recv(t, helds, "budget hold")
	if ra <= 0 {
		t.Fatalf("hold Retry-After %s", ra)
	}
	if w := recv(t, waits, "wait after the hold"); w < ra {
		t.Fatalf("waited %s after a hold of %s", w, ra)
	}
	close(release)
	done := map[string]client.Outcome{}
	for range 2 {
		r := recv(t, results, "result")
		done[r.Lease.RunID().String()] = r.Outcome
	}
	if done[first.RunID.String()] != client.Succeeded || done[second.RunID.String()] != client.Succeeded {
		t.Fatalf("results %v", done)
	}
}

// longPollTap counts the claims that may wait for work (waitSeconds > 0) in flight at once.
type longPollTap struct {
	mu       sync.Mutex
	now, max int
}

func (lp *longPollTap) RoundTrip(r *http.Request) (*http.Response, error) {
	long := false
	if strings.HasSuffix(r.URL.Path, "/claim") && r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var req api.ClaimRequest
		long = json.Unmarshal(b, &req) == nil && req.WaitSeconds != nil && *req.WaitSeconds > 0
	}
	if long {
		lp.mu.Lock()
		lp.now++
		lp.max = max(lp.max, lp.now)
		lp.mu.Unlock()
		defer func() { lp.mu.Lock(); lp.now--; lp.mu.Unlock() }()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// An idle worker keeps at most LongPolls claims waiting for work, whatever its concurrency,
// and still fills every slot when runs come: each claim that finds a run lets another
// poller claim at once.
func TestIdleWorkerLongPollsFewClaimsAndStillFillsItsSlots(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	lp := &longPollTap{}
	c := s.client(t, s.RuntimeKey, client.WithHTTPClient(&http.Client{Transport: lp}))
	const n = 6
	cfg := workerConfig("fill")
	cfg.Concurrency, cfg.LongPolls = n, 2
	results := finishedHook(&cfg)
	var running sync.WaitGroup
	running.Add(n)
	all := make(chan struct{})
	go func() { running.Wait(); close(all) }()
	idle := make(chan struct{})
	var idleOnce sync.Once
	cfg.Hooks.ClaimFailed = func(err error) { t.Errorf("claim failed: %v", err) }
	startWorker(t, c, cfg, func(ctx context.Context, l *client.Lease) error {
		running.Done()
		<-all // every slot holds a run at once
		return nil
	})
	// Let the pollers find the queue empty and settle into waiting.
	go func() {
		for {
			lp.mu.Lock()
			waiting := lp.now
			lp.mu.Unlock()
			if waiting == 2 {
				idleOnce.Do(func() { close(idle) })
				return
			}
			_ = client.Sleep(context.Background(), 5*time.Millisecond)
		}
	}()
	recv(t, idle, "two waiting claims")
	for range n {
		s.enqueue(t, "fill")
	}
	recv(t, all, "every slot running")
	for range n {
		if r := recv(t, results, "result"); r.Outcome != client.Succeeded {
			t.Fatalf("result %+v", r)
		}
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.max > 2 {
		t.Fatalf("%d claims waited for work at once, want at most 2", lp.max)
	}
}

// A worker whose claims the service refuses for its configuration (here a release that
// was never registered: 422 release_not_active) keeps running, backs off exponentially to
// a cap, logs the cause once per minute rather than on every claim, and claims as soon as
// the configuration is fixed. The service counts those claims as refused, not as errors.
func TestConfigurationRefusalBacksOffAndLogsOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	c := s.client(t, s.RuntimeKey)
	const refusals = 9
	var (
		mu    sync.Mutex
		waits []time.Duration
		fixed = make(chan struct{})
	)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		if len(waits) == refusals {
			close(fixed)
		}
		mu.Unlock()
		return client.Sleep(ctx, time.Millisecond) // the waits are recorded, not waited
	})
	var logs syncbuf.Buffer
	cfg := workerConfig("refused")
	cfg.ReleaseID = "rel-registered-later"
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var failed atomic.Int64
	cfg.Hooks.ClaimFailed = func(err error) {
		if !errors.Is(err, client.ErrReleaseNotActive) {
			t.Errorf("claim failed with %v, want release_not_active", err)
		}
		failed.Add(1)
	}
	results := finishedHook(&cfg)
	stop := startWorker(t, c, cfg, func(context.Context, *client.Lease) error { return nil })

	<-fixed
	// Each wait is at least half the doubled backoff, up to the cap: 1s, 2s, 4s, … 1m.
	mu.Lock()
	got := append([]time.Duration(nil), waits[:refusals]...)
	mu.Unlock()
	for i, w := range got {
		d := min(client.RefusalBackoff<<i, client.RefusalBackoffMax)
		if w < d/2 || w > d {
			t.Errorf("wait %d after a refusal was %s, want %s to %s (all: %v)", i+1, w, d/2, d, got)
		}
	}
	// One log line for one cause, not one per refusal.
	lines := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"code":"release_not_active"`) {
			lines++
		}
	}
	if lines != 1 {
		t.Errorf("%d log lines name release_not_active after %d refusals, want 1:\n%s", lines, failed.Load(), logs.String())
	}

	// The configuration is fixed: the worker, still running, claims.
	refs, hash := client.ManifestOf("oci://agents/sdk@sha256:late")
	if _, _, err := s.Runtime.PutRelease(context.Background(), cfg.ReleaseID, testAdapter, api.PutReleaseRequest{
		ManifestHash: hash, ContentRefs: refs, State: api.Ptr(api.ReleaseActive),
	}, ""); err != nil {
		t.Fatal(err)
	}
	run := s.enqueue(t, "refused")
	if r := recv(t, results, "result after the fix"); r.Lease.RunID() != run.RunID || r.Outcome != client.Succeeded {
		t.Fatalf("result %+v", r)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v", err)
	}

	// The service counted the refusals as refused, none as error.
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	metric := func(name string) float64 {
		for _, l := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		t.Fatalf("no %s in /metrics", name)
		return 0
	}
	if n := metric(`ledger_claims_total{outcome="refused"}`); n < refusals {
		t.Errorf("ledger_claims_total{outcome=\"refused\"} = %v after %d refusals", n, refusals)
	}
	if n := metric(`ledger_claims_total{outcome="error"}`); n != 0 {
		t.Errorf("ledger_claims_total{outcome=\"error\"} = %v, want 0", n)
	}
}

// TestResumedRunIsLogged: a run claimed before (its first holder gone, the attempt charged)
// is claimed again with a warning naming the attempt's number and the run's budget, since
// each crash of a worker spends one of its attempts.
func TestResumedRunIsLogged(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	kind := "resumed"
	run := s.enqueue(t, kind)
	cl, err := s.Runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "first", ReleaseID: testRelease, AdapterVersion: testAdapter,
		ModelProfileID: testModel, Kinds: []string{kind}})
	if err != nil || cl == nil {
		t.Fatalf("claim: %v %v", cl, err)
	}
	if _, err := s.Runtime.ReleaseAttempt(ctx, cl.Attempt.AttemptID, api.ReleaseAttemptRequest{FencingToken: cl.Lease.FencingToken,
		Charge: true, RetryAfterSeconds: api.Ptr(0)}); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	cfg := workerConfig(kind)
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	results := finishedHook(&cfg)
	stop := startWorker(t, s.Runtime, cfg, func(context.Context, *client.Lease) error { return nil })
	r := recv(t, results, "result")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if r.Outcome != client.Succeeded || r.Lease.FencingToken() != 2 {
		t.Fatalf("result %+v", r)
	}
	var said struct {
		Msg         string `json:"msg"`
		Attempt     int    `json:"attempt"`
		MaxAttempts int    `json:"max_attempts"`
	}
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `"resuming run"`) {
			if err := json.Unmarshal([]byte(line), &said); err != nil {
				t.Fatal(err)
			}
		}
	}
	if said.Msg != "resuming run" || said.Attempt != 2 || said.MaxAttempts != run.MaxAttempts {
		t.Fatalf("logged %+v, want attempt 2 of %d:\n%s", said, run.MaxAttempts, logs.String())
	}
}

type codedError struct{}

func (codedError) Error() string     { return "the search tool timed out" }
func (codedError) ErrorCode() string { return "tool_timeout" }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
