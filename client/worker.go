package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// Handler does the work of one claimed run. Its context ends when the lease is lost
// (cause ErrLeaseLost), when the run is cancelled (ErrCancelRequested) or when the Worker's
// shutdown grace runs out (ErrShutdown); read the cause with context.Cause. Its return
// decides how the attempt ends:
//   - nil: completed as succeeded;
//   - Permanent(err): completed as failed (the run is not tried again);
//   - any other error: released with a charge, due again after the service's backoff (or
//     as RetryAfter(err, d) or WorkerConfig.OnError says);
//   - any return after ErrCancelRequested: completed as cancelled;
//   - a panic: released as an error is, logged and reported to Hooks.Panicked.
//
// The Worker tells the ledger why (ErrorOf): the error's type as its code (or its
// ErrorCoder's code), its message and its chain, or a panic's value and stack, so the run
// shows why it failed without the handler writing any of it.
//
// After the lease is lost nothing is sent, whatever the return. A handler may also end its
// lease itself (Lease.Complete with an outcome hash, Lease.Release); the Worker then sends
// nothing more.
type Handler func(ctx context.Context, l *Lease) error

// Permanent marks a handler's error as final: the Worker completes the attempt as failed
// instead of releasing the run for another try.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter marks a handler's error with when the run should be tried again: the Worker
// releases it with a charge, due after d (whole seconds, up to a day).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err, d}
}

type retryAfterError struct {
	err error
	d   time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// Retry says how a run whose handler returned an error is released.
type Retry struct {
	// Charge spends one of the run's attempts (at maxAttempts the run ends exhausted).
	Charge bool
	// After is when the run is due again (nil: the service's backoff, exponential from 1s).
	After *time.Duration
}

// WorkerConfig configures a Worker. ReleaseID, AdapterVersion and ModelProfileID are
// required; the rest have defaults.
type WorkerConfig struct {
	// HolderID names this worker in the runs it leases (default: host name, process id and
	// a random suffix).
	HolderID string
	// ReleaseID and AdapterVersion name the active release this worker runs;
	// ModelProfileID the model profile. Every claim and attempt records them.
	ReleaseID, AdapterVersion, ModelProfileID string
	// LeaseSeconds is each lease's length, 1..3600 (0: the service's default).
	LeaseSeconds int
	// Kinds, AgentIDs and ProjectIDs, when not empty, claim only runs matching one of each.
	Kinds, AgentIDs, ProjectIDs []string
	// Concurrency is how many handlers run at once (default 1).
	Concurrency int
	// LongPolls is how many claims may wait for work at once (default 2). Every free slot
	// claims at once while claims find runs; one that finds none waits for a long-poll turn.
	// Each waiting claim holds one of the tenant's long-poll places on the replica (64 by
	// default, shared by every worker of the tenant), so a long poll per slot would use them
	// up; the service wakes one waiting claim per new run, so a few wait as well as many.
	LongPolls int
	// WaitSeconds is each claim's long poll, 0..30 (default 5). Shutdown lets claims in
	// flight answer (within the grace) rather than abandon one whose lease may already be
	// granted, so this bounds how long an idle worker takes to stop. -1 means 0: claims
	// answer at once, and IdleWait paces them.
	WaitSeconds int
	// IdleWait is the pause after a claim found nothing when WaitSeconds is 0 (default 1s).
	IdleWait time.Duration
	// HeartbeatEvery is how often a lease is renewed (default: a third of its length).
	HeartbeatEvery time.Duration
	// ShutdownGrace is how long running handlers may finish after Run's context ends
	// (default 30s); then their contexts end with ErrShutdown and their leases are released
	// uncharged.
	ShutdownGrace time.Duration
	// ParkAfter is how long a handler's Decide or WaitChildren waits before it parks the run
	// (default 30s; Lease.SetParkAfter). While the Worker stops they park at once.
	ParkAfter time.Duration
	// OnError says how a run whose handler returned err is released (default: charged, due
	// after RetryAfter's delay when err carries one, else the service's backoff).
	OnError func(l *Lease, err error) Retry
	// Logger receives the worker's structured logs (default slog.Default()).
	Logger *slog.Logger
	// Hooks are called as runs are claimed and settled, for metrics.
	Hooks Hooks
}

// Hooks are optional callbacks for metrics; each is called from the worker's goroutines and
// must not block for long.
type Hooks struct {
	// Claimed is called when a run is claimed, before its handler starts.
	Claimed func(l *Lease)
	// Held is called when a claim was held back (the tenant's budget of leased runs is
	// spent, or too many of its claims are waiting at once), with the wait the service
	// asked for.
	Held func(retryAfter time.Duration)
	// ClaimFailed is called when a claim failed (the worker backs off and tries again,
	// unless the error is ErrUnauthorized, ErrForbidden or ErrInvalidRequest: Run returns it).
	ClaimFailed func(err error)
	// Finished is called once per claimed run, when its lease is settled.
	Finished func(r Result)
	// Panicked is called when a handler panicked, with the value and the stack.
	Panicked func(l *Lease, value any, stack []byte)
}

// Outcome is how a claimed run's lease was settled.
type Outcome int

// Outcomes.
const (
	// Succeeded, Failed and Cancelled: the Worker completed the attempt in that state.
	Succeeded Outcome = iota
	Failed
	Cancelled
	// Released: the Worker released the run after an error or a panic.
	Released
	// LeaseLost: the lease was lost; nothing was sent after.
	LeaseLost
	// ShutdownReleased: the shutdown grace ran out (or the run was claimed while stopping);
	// the run was released uncharged.
	ShutdownReleased
	// SettledByHandler: the handler completed or released the lease itself.
	SettledByHandler
	// Unsettled: the complete or release failed (see Result.SettleErr); the lease passes and
	// the reaper takes the run back.
	Unsettled
	// Parked: the handler parked the run (Decide, WaitChildren or Lease.Park) to wait
	// without a lease; it is claimed again when its conditions close.
	Parked
)

var outcomeNames = [...]string{"succeeded", "failed", "cancelled", "released", "lease_lost", "shutdown_released", "settled_by_handler", "unsettled", "parked"}

// String is the outcome's name in logs: succeeded, lease_lost, ….
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is what became of one claimed run.
type Result struct {
	Lease   *Lease
	Outcome Outcome
	// Err is the handler's error (a panic's as an error), nil when it returned nil.
	Err error
	// Duration is how long the handler ran.
	Duration time.Duration
	// SettleErr is why the complete or release failed (Outcome Unsettled or LeaseLost).
	SettleErr error
}

// Worker claims runs and runs a Handler for each, keeping its lease renewed. Make one with
// NewWorker and start it with Run.
type Worker struct {
	c   *Client
	cfg WorkerConfig
	h   Handler
	log *slog.Logger

	mu      sync.Mutex
	running map[*Lease]struct{}
	// refusalLogged is when each cause of a refused claim was last logged, and how many
	// refusals of it went unlogged since (logRefusal).
	refusalLogged map[string]refusalLog
	// forced is set when the shutdown grace ran out: a lease tracked after it is released
	// at once.
	forced bool
}

// NewWorker returns a Worker that claims with c as cfg says and runs h for each run.
func NewWorker(c *Client, cfg WorkerConfig, h Handler) (*Worker, error) {
	if c == nil || h == nil {
		return nil, errors.New("ledger worker: nil client or handler")
	}
	if cfg.ReleaseID == "" || cfg.AdapterVersion == "" || cfg.ModelProfileID == "" {
		return nil, errors.New("ledger worker: ReleaseID, AdapterVersion and ModelProfileID are required")
	}
	if cfg.LeaseSeconds < 0 || cfg.LeaseSeconds > 3600 {
		return nil, fmt.Errorf("ledger worker: LeaseSeconds %d is outside 0..3600", cfg.LeaseSeconds)
	}
	if cfg.WaitSeconds < -1 || cfg.WaitSeconds > 30 {
		return nil, fmt.Errorf("ledger worker: WaitSeconds %d is outside -1..30", cfg.WaitSeconds)
	}
	if cfg.HolderID == "" {
		cfg.HolderID = defaultHolderID()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.LongPolls <= 0 {
		cfg.LongPolls = defaultLongPolls
	}
	cfg.LongPolls = min(cfg.LongPolls, cfg.Concurrency)
	switch cfg.WaitSeconds {
	case 0:
		cfg.WaitSeconds = defaultWaitSeconds
	case -1:
		cfg.WaitSeconds = 0
	}
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = defaultIdleWait
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = defaultShutdownGrace
	}
	if cfg.OnError == nil {
		cfg.OnError = defaultOnError
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("holder_id", cfg.HolderID)
	return &Worker{c: c, cfg: cfg, h: h, log: log, running: map[*Lease]struct{}{}, refusalLogged: map[string]refusalLog{}}, nil
}

func defaultHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	if len(id) > 128 {
		id = id[len(id)-128:]
	}
	return id
}

func defaultOnError(_ *Lease, err error) Retry {
	r := Retry{Charge: true}
	var ra *retryAfterError
	if errors.As(err, &ra) {
		r.After = &ra.d
	}
	return r
}

// HolderID is the holder id this worker claims with.
func (w *Worker) HolderID() string { return w.cfg.HolderID }

// Refused claims back off from RefusalBackoff, doubling to RefusalBackoffMax, and each cause
// is logged at most once per RefusalLogEvery.
const (
	RefusalBackoff    = time.Second
	RefusalBackoffMax = time.Minute
	RefusalLogEvery   = time.Minute
)

// refusedClaim reports whether the service refused a claim for what it asks (a 4xx other
// than 408 and 429: a release that is not active, an unknown project): a configuration
// error that trying again at once will not fix, but that an operator may fix while the
// worker waits, so the worker keeps trying, slowly.
func refusedClaim(err error) bool {
	var p *Problem
	return errors.As(err, &p) && p.Status >= 400 && p.Status < 500 &&
		p.Status != http.StatusRequestTimeout && p.Status != http.StatusTooManyRequests
}

type refusalLog struct {
	at         time.Time
	suppressed int
}

// logRefusal logs a refused claim unless its cause (status and problem code) was logged
// less than RefusalLogEvery ago: a worker refused every few seconds for an hour says so
// once a minute, with how many refusals it did not log, not a thousand times.
func (w *Worker) logRefusal(ctx context.Context, err error, wait time.Duration) {
	var p *Problem
	errors.As(err, &p)
	cause := fmt.Sprintf("%d %s", p.Status, p.Code)
	now := time.Now()
	w.mu.Lock()
	last, seen := w.refusalLogged[cause]
	if seen && now.Sub(last.at) < RefusalLogEvery {
		last.suppressed++
		w.refusalLogged[cause] = last
		w.mu.Unlock()
		return
	}
	w.refusalLogged[cause] = refusalLog{at: now}
	w.mu.Unlock()
	w.log.ErrorContext(ctx, "claim refused: check the worker's configuration (release, project, kinds); trying again with backoff",
		"err", err, "status", p.Status, "code", string(p.Code), "wait", wait.String(), "unlogged_since_last", last.suppressed)
}

// fatalClaim reports whether a claim error will not pass by trying again: the key, the
// role or the claim itself is wrong.
func fatalClaim(err error) bool {
	return errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden) || errors.Is(err, ErrInvalidRequest)
}

// Run claims and handles runs until ctx ends, then shuts down: it stops claiming, lets
// running handlers and claims in flight finish within ShutdownGrace (a run claimed while
// stopping is released uncharged at once), then ends the remaining handlers' contexts with
// ErrShutdown and releases their leases uncharged, and returns once every handler has
// returned. It returns nil after a shutdown, or the error that stopped claiming for good
// (ErrUnauthorized, ErrForbidden, ErrInvalidRequest) after shutting down the same way. A
// handler that ignores its context keeps Run from returning. Call Run once at a time.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	w.forced = false
	w.mu.Unlock()
	stopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// Claims and handlers outlive ctx: they end by the grace, not by the caller.
	base := context.WithoutCancel(ctx)
	claimCtx, cancelClaims := context.WithCancel(base)
	defer cancelClaims()

	var (
		wg       sync.WaitGroup // pollers and handlers
		fatalMu  sync.Mutex
		fatalErr error
	)
	// A poller takes a free slot before it claims; the handler of what it claimed gives
	// the slot back when the run is settled.
	slots := make(chan struct{}, w.cfg.Concurrency)
	turns := claimTurns{long: make(chan struct{}, w.cfg.LongPolls), kick: make(chan struct{}, 1)}
	for range w.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.poll(stopCtx, claimCtx, base, slots, &turns, &wg); err != nil {
				fatalMu.Lock()
				if fatalErr == nil {
					fatalErr = err
				}
				fatalMu.Unlock()
				stop(err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	select {
	case <-done:
	case <-stopCtx.Done():
		w.log.InfoContext(base, "worker stopping", "grace", w.cfg.ShutdownGrace, "running", w.Running())
		grace := time.NewTimer(w.cfg.ShutdownGrace)
		select {
		case <-done:
			grace.Stop()
		case <-grace.C:
			cancelClaims()
			w.forceRelease(base)
			<-done
		}
	}
	fatalMu.Lock()
	defer fatalMu.Unlock()
	return fatalErr
}

// Running is how many handlers are running now.
func (w *Worker) Running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// forceRelease ends every running lease with ErrShutdown (which ends its handler's
// context) and releases it uncharged, due at once.
func (w *Worker) forceRelease(base context.Context) {
	w.mu.Lock()
	w.forced = true
	leases := make([]*Lease, 0, len(w.running))
	for l := range w.running {
		leases = append(leases, l)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range leases {
		if !l.end(fmt.Errorf("%w: the grace of %s ran out", ErrShutdown, w.cfg.ShutdownGrace)) {
			continue // settled or lost meanwhile
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.releaseUncharged(base, l, "shutdown grace ran out")
		}()
	}
	wg.Wait()
}

// releaseUncharged gives a run back as it was, due at once, bypassing the lease's local
// refusal (the lease was ended locally so that its handler sends nothing more).
func (w *Worker) releaseUncharged(base context.Context, l *Lease, why string) {
	ctx, cancel := context.WithTimeout(base, max(l.length, settleTimeoutMin))
	defer cancel()
	_, err := w.c.ReleaseAttempt(ctx, l.AttemptID(), api.ReleaseAttemptRequest{
		FencingToken: l.FencingToken(), RetryAfterSeconds: api.Ptr(0),
	})
	log := w.leaseLog(l)
	if err != nil {
		log.WarnContext(ctx, "releasing the lease failed; the reaper takes the run back when it passes", "why", why, "err", err)
		return
	}
	log.InfoContext(ctx, "released the lease uncharged", "why", why)
}

func (w *Worker) leaseLog(l *Lease) *slog.Logger {
	return w.log.With("run_id", l.RunID(), "attempt_id", l.AttemptID(), "fencing_token", l.FencingToken())
}

// poll claims runs for free slots and starts their handlers (counted in handlers) until
// stopCtx ends, or returns the error of a claim that cannot succeed.
func (w *Worker) poll(stopCtx, claimCtx, base context.Context, slots chan struct{}, turns *claimTurns, handlers *sync.WaitGroup) error {
	req := api.ClaimRequest{
		HolderID: w.cfg.HolderID, ReleaseID: w.cfg.ReleaseID, AdapterVersion: w.cfg.AdapterVersion,
		ModelProfileID: w.cfg.ModelProfileID, WaitSeconds: api.Ptr(w.cfg.WaitSeconds),
		Kinds: w.cfg.Kinds, AgentIDs: w.cfg.AgentIDs, ProjectIDs: w.cfg.ProjectIDs,
	}
	if w.cfg.LeaseSeconds > 0 {
		req.LeaseSeconds = api.Ptr(w.cfg.LeaseSeconds)
	}
	var failures claimFailures
	for {
		select { // a free slot first: a claim holds its run from the moment it answers
		case slots <- struct{}{}:
		case <-stopCtx.Done():
			return nil
		}
		l, sent, err := w.claimOne(stopCtx, claimCtx, base, req, turns, &failures)
		switch {
		case l == nil:
			<-slots
			return err // stopping, or a claim that cannot succeed
		case stopCtx.Err() != nil:
			l.end(fmt.Errorf("%w: claimed while stopping", ErrShutdown))
			w.releaseUncharged(base, l, "claimed while stopping")
			w.finished(Result{Lease: l, Outcome: ShutdownReleased})
			<-slots
			return nil
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			defer func() { <-slots }()
			w.handle(base, l, sent)
		}()
	}
}

// claimTurns paces the pollers: long holds a token per claim that may wait for work, and
// kick wakes a poller that is waiting for a turn when another's claim found a run (where
// there was one there may be more).
type claimTurns struct {
	long chan struct{}
	kick chan struct{}
}

// claimOne claims until it leases a run (returned with the time its claim was sent), until
// stopCtx ends (nil and no error), or until a claim cannot succeed (nil and its error). It
// claims at once first; after a claim that found nothing it waits for a long-poll turn (or a
// kick, for one more claim at once). It waits out budget holds and backs off after failures.
// claimFailures counts a poller's claims that failed in a row: refused ones (refusedClaim)
// and others, each with a backoff of its own.
type claimFailures struct{ failed, refused int }

func (w *Worker) claimOne(stopCtx, claimCtx, base context.Context, req api.ClaimRequest, turns *claimTurns, failures *claimFailures) (*Lease, time.Time, error) {
	quick := req
	quick.WaitSeconds = api.Ptr(0)
	waiting := false // the last claim found nothing: wait for a turn
	for stopCtx.Err() == nil {
		r, long := &quick, false
		if waiting && w.cfg.WaitSeconds > 0 {
			select {
			case turns.long <- struct{}{}:
				r, long = &req, true
			case <-turns.kick:
			case <-stopCtx.Done():
				return nil, time.Time{}, nil
			}
		}
		sent := time.Now()
		cl, err := w.c.ClaimRun(claimCtx, *r)
		if long {
			<-turns.long
		}
		var held *HeldError
		switch {
		case errors.As(err, &held):
			*failures = claimFailures{}
			if w.cfg.Hooks.Held != nil {
				w.cfg.Hooks.Held(held.RetryAfter)
			}
			w.log.DebugContext(base, "claim held", "retry_after", held.RetryAfter)
			_ = w.c.sleep(stopCtx, held.RetryAfter+fullJitter(held.RetryAfter/heldJitterDivisor+time.Millisecond, heldJitterMax, 1))
		case err != nil:
			if stopCtx.Err() != nil && claimCtx.Err() != nil {
				return nil, time.Time{}, nil
			}
			if w.cfg.Hooks.ClaimFailed != nil {
				w.cfg.Hooks.ClaimFailed(err)
			}
			if fatalClaim(err) {
				w.log.ErrorContext(base, "claim refused; the worker stops", "err", err)
				return nil, time.Time{}, err
			}
			if refusedClaim(err) {
				failures.failed = 0
				failures.refused++
				wait := equalJitter(RefusalBackoff, RefusalBackoffMax, failures.refused)
				w.logRefusal(base, err, wait)
				_ = w.c.sleep(stopCtx, wait)
				continue
			}
			failures.refused = 0
			failures.failed++
			wait := fullJitter(claimBackoffBase, claimBackoffMax, failures.failed)
			if p := (*Problem)(nil); errors.As(err, &p) && p.RetryAfter > wait {
				wait = p.RetryAfter
			}
			w.log.WarnContext(base, "claim failed; trying again", "err", err, "wait", wait)
			_ = w.c.sleep(stopCtx, wait)
		case cl == nil:
			*failures = claimFailures{}
			waiting = true
			if w.cfg.WaitSeconds == 0 {
				_ = w.c.sleep(stopCtx, w.cfg.IdleWait)
			}
		default:
			*failures = claimFailures{}
			select { // where there was a run there may be more: one waiting poller claims too
			case turns.kick <- struct{}{}:
			default:
			}
			l := NewLease(w.c, *cl)
			l.parkAfter, l.stopping = w.cfg.ParkAfter, stopCtx.Done()
			return l, sent, nil
		}
	}
	return nil, time.Time{}, nil
}

func (w *Worker) finished(r Result) {
	if w.cfg.Hooks.Finished != nil {
		w.cfg.Hooks.Finished(r)
	}
}

// handle runs the handler for one lease with its heartbeat, then settles the lease.
func (w *Worker) handle(base context.Context, l *Lease, sent time.Time) {
	log := w.leaseLog(l)
	hctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	l.mu.Lock()
	l.onEnd = func(cause error) {
		if errors.Is(cause, ErrLeaseLost) || errors.Is(cause, ErrShutdown) {
			cancel(cause)
		}
	}
	l.mu.Unlock()
	w.mu.Lock()
	forced := w.forced
	if !forced {
		w.running[l] = struct{}{}
	}
	w.mu.Unlock()
	if forced { // the grace ran out between the claim and now
		l.end(fmt.Errorf("%w: the grace of %s ran out", ErrShutdown, w.cfg.ShutdownGrace))
		w.releaseUncharged(base, l, "shutdown grace ran out")
		w.finished(Result{Lease: l, Outcome: ShutdownReleased})
		return
	}
	defer func() {
		w.mu.Lock()
		delete(w.running, l)
		w.mu.Unlock()
	}()
	if w.cfg.Hooks.Claimed != nil {
		w.cfg.Hooks.Claimed(l)
	}
	log.DebugContext(hctx, "claimed run", "subject", l.claim.Run.Subject, "kind", l.claim.Run.Kind,
		"attempts_spent", l.claim.Run.AttemptsSpent, "leased_until", l.claim.Lease.LeasedUntil)
	if l.FencingToken() > 1 {
		// Claimed before: a holder that died mid-run (SIGKILL) cost the run one of its attempts.
		log.WarnContext(hctx, "resuming run", "attempt", l.claim.Run.AttemptsSpent+1,
			"max_attempts", l.claim.Run.MaxAttempts, "epoch", l.FencingToken(),
			"note", "a run whose attempts are all spent ends exhausted")
	}

	hbCtx, stopHB := context.WithCancel(base)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(hbCtx, l, sent, cancel, log)
	}()

	start := time.Now()
	err, panicked := w.call(hctx, l, log)
	dur := time.Since(start)
	stopHB()
	<-hbDone

	r := w.settle(base, l, err, panicked, log)
	r.Duration = dur
	w.finished(r)
}

// call runs the handler, turning a panic into an error (a *handlerPanic).
func (w *Worker) call(ctx context.Context, l *Lease, log *slog.Logger) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			err, panicked = &handlerPanic{value: v, stack: stack}, true
			log.ErrorContext(ctx, "handler panicked", "panic", v, "stack", string(stack))
			if w.cfg.Hooks.Panicked != nil {
				w.cfg.Hooks.Panicked(l, v, stack)
			}
		}
	}()
	return w.h(ctx, l), false
}

// heartbeat renews the lease every HeartbeatEvery until ctx ends. A refusal that means
// the lease is gone ends it (which cancels the handler); so do renewals that keep failing
// until the lease has passed by this machine's clock, counted from when the claim or the
// last good renewal was sent. A pending cancel is acknowledged once and ends the handler's
// context with ErrCancelRequested.
func (w *Worker) heartbeat(ctx context.Context, l *Lease, sent time.Time, cancel context.CancelCauseFunc, log *slog.Logger) {
	every := w.cfg.HeartbeatEvery
	if every <= 0 {
		every = l.length / heartbeatDivisor
	}
	every = max(every, heartbeatMin)
	deadline := sent.Add(l.length)
	acked := false
	wait := every
	for {
		// Real timers, not c.sleep: renewals keep real time whatever a test does to retries.
		if err := sleepCtx(ctx, wait); err != nil {
			return
		}
		if l.Err() != nil {
			return
		}
		hbSent := time.Now()
		hbCtx, hbCancel := context.WithDeadline(ctx, deadline)
		hb, err := l.Heartbeat(hbCtx)
		hbCancel()
		switch {
		case err == nil:
			deadline = hbSent.Add(l.length)
			wait = every
			if hb.CancelRequested && !acked {
				acked = true
				if aerr := l.ObserveCancellation(ctx); aerr != nil && !errors.Is(aerr, ErrLeaseLost) {
					log.WarnContext(ctx, "acknowledging the cancel request failed", "err", aerr)
				}
				log.InfoContext(ctx, "run cancel requested")
				cancel(ErrCancelRequested)
			}
		case l.Err() != nil:
			if errors.Is(l.Err(), ErrLeaseLost) {
				log.WarnContext(ctx, "lease lost", "err", err)
			}
			return // lost, or ended by the handler
		case ctx.Err() != nil:
			return
		case !time.Now().Before(deadline):
			lerr := l.lost(fmt.Errorf("renewals failed until the lease passed by this machine's clock: %w", err))
			log.WarnContext(ctx, "lease lost", "err", lerr)
			return
		default:
			// Try again soon enough to renew before the lease passes.
			wait = min(every, max(time.Until(deadline)/3, 10*time.Millisecond))
			log.WarnContext(ctx, "renewing the lease failed; trying again", "err", err, "wait", wait)
		}
	}
}

// handlerPanic is a handler's panic as the error the Worker settles it with: the ledger gets
// its value and stack (PanicError).
type handlerPanic struct {
	value any
	stack []byte
}

func (p *handlerPanic) Error() string { return fmt.Sprintf("handler panicked: %v", p.value) }

// attemptError is what the ledger keeps of the handler's return: its error, or its panic
// with the stack.
func attemptError(herr error) *api.AttemptError {
	var p *handlerPanic
	if errors.As(herr, &p) {
		return PanicError(p.value, p.stack)
	}
	return ErrorOf(herr)
}

// settle ends the attempt as the handler's return says, unless the lease is already
// lost or ended, and says what became of it.
func (w *Worker) settle(base context.Context, l *Lease, herr error, panicked bool, log *slog.Logger) Result {
	r := Result{Lease: l, Err: herr}
	if lerr := l.Err(); lerr != nil {
		switch {
		case errors.Is(lerr, ErrLeaseLost):
			r.Outcome = LeaseLost
			if herr == nil {
				log.WarnContext(base, "handler returned after its lease was lost; nothing was recorded of its end")
			}
		case errors.Is(lerr, ErrShutdown):
			r.Outcome = ShutdownReleased
		case errors.Is(lerr, ErrParked):
			r.Outcome = Parked
		default:
			r.Outcome = SettledByHandler
		}
		return r
	}
	ctx, cancel := context.WithTimeout(base, max(l.length, settleTimeoutMin))
	defer cancel()
	var (
		perm *permanentError
		err  error
	)
	switch {
	case l.CancelRequested():
		r.Outcome = Cancelled
		_, err = l.CompleteWithError(ctx, api.CompleteCancelled, nil, attemptError(herr))
	case herr == nil && !panicked:
		r.Outcome = Succeeded
		_, err = l.Complete(ctx, api.CompleteSucceeded, nil)
	case errors.As(herr, &perm) && !panicked:
		r.Outcome = Failed
		_, err = l.CompleteWithError(ctx, api.CompleteFailed, nil, attemptError(herr))
	default:
		r.Outcome = Released
		retry := w.cfg.OnError(l, herr)
		_, err = l.ReleaseWithError(ctx, retry.Charge, retry.After, attemptError(herr))
	}
	switch {
	case err == nil && herr == nil && r.Outcome != Cancelled:
		log.DebugContext(ctx, "run settled", "outcome", r.Outcome)
	case err == nil:
		log.WarnContext(ctx, "run settled", "outcome", r.Outcome, "handler_err", herr)
	case errors.Is(err, ErrLeaseLost):
		r.Outcome, r.SettleErr = LeaseLost, err
		log.WarnContext(ctx, "lease lost before it was settled", "err", err)
	default:
		r.Outcome, r.SettleErr = Unsettled, err
		log.ErrorContext(ctx, "settling the lease failed; the reaper takes the run back when it passes", "err", err)
	}
	return r
}
