// Command worker is a toy agent runtime built on the ledger Go SDK (package client). Each
// run it handles takes a number of steps, writes a checkpoint after each, records one tool
// call and, with --decision, asks a person to approve half way. Killed at any point and
// started again, it resumes each run from its last checkpoint: the steps already
// checkpointed are not done again.
//
//	LEDGER_URL=http://localhost:8080 LEDGER_KEY=<runtime key> LEDGER_ADMIN_KEY=<admin key> \
//	  go run ./examples/worker --enqueue 2 --decision
//
// --enqueue N queues N runs first (creating the project with the admin key when one is
// given). SIGINT or SIGTERM stops it gracefully: running steps get --grace to finish, then
// their runs are given back uncharged; a run waiting for its decision parks at once (it is
// claimed again when the decision is answered, and carries on with the answer). A run waits
// --park-after for its decision before it parks. --runs N exits after N runs are settled.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

type config struct {
	url, key, adminKey     string
	project, kind, release string
	adapter, model         string
	steps, enqueue, runs   int
	concurrency            int
	stepTime, grace        time.Duration
	parkAfter              time.Duration
	decision, verbose      bool
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", envOr("LEDGER_URL", client.DefaultBaseURL), "service base URL (LEDGER_URL)")
	fs.StringVar(&c.key, "key", os.Getenv("LEDGER_KEY"), "runtime key (LEDGER_KEY)")
	fs.StringVar(&c.adminKey, "admin-key", os.Getenv("LEDGER_ADMIN_KEY"), "admin key, to create the project for --enqueue (LEDGER_ADMIN_KEY; optional)")
	fs.StringVar(&c.project, "project", "toys", "project of the runs")
	fs.StringVar(&c.kind, "kind", "toy", "kind of run to enqueue and claim")
	fs.StringVar(&c.release, "release", "toy-agent", "release id the worker registers and runs")
	fs.StringVar(&c.adapter, "adapter", "1.0", "adapter version of the release")
	fs.StringVar(&c.model, "model", "toy-model", "model profile id")
	fs.IntVar(&c.steps, "steps", 5, "steps per run, one checkpoint each")
	fs.DurationVar(&c.stepTime, "step-time", time.Second, "how long a step takes")
	fs.BoolVar(&c.decision, "decision", false, "ask for an approval half way through each run")
	fs.DurationVar(&c.parkAfter, "park-after", client.DefaultParkAfter, "how long a run waits for its decision before it parks")
	fs.IntVar(&c.enqueue, "enqueue", 0, "runs to enqueue before working")
	fs.IntVar(&c.runs, "runs", 0, "exit after this many runs are settled (0: run until stopped)")
	fs.IntVar(&c.concurrency, "concurrency", 4, "runs handled at once")
	fs.DurationVar(&c.grace, "grace", 10*time.Second, "how long running steps may finish after SIGINT or SIGTERM")
	fs.BoolVar(&c.verbose, "v", false, "log the SDK's debug lines")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.key == "" {
		return c, errors.New("no key: set LEDGER_KEY or --key to a runtime key")
	}
	if c.steps < 2 {
		return c, errors.New("--steps must be at least 2")
	}
	return c, nil
}

func run(args []string) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if cfg.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := client.New(client.WithBaseURL(cfg.url), client.WithKey(cfg.key), client.WithUserAgent("ledger-toy-worker/1"))
	if err != nil {
		return err
	}
	if err := register(ctx, c, cfg); err != nil {
		return err
	}
	if cfg.enqueue > 0 {
		if err := enqueue(ctx, cfg); err != nil {
			return err
		}
	}

	var settled atomic.Int64
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := client.NewWorker(c, client.WorkerConfig{
		ReleaseID: cfg.release, AdapterVersion: cfg.adapter, ModelProfileID: cfg.model,
		Kinds: []string{cfg.kind}, Concurrency: cfg.concurrency, ShutdownGrace: cfg.grace, ParkAfter: cfg.parkAfter, Logger: log,
		Hooks: client.Hooks{Finished: func(r client.Result) {
			fmt.Printf("run %s: %s\n", r.Lease.RunID(), r.Outcome)
			if n := settled.Add(1); cfg.runs > 0 && n >= int64(cfg.runs) {
				cancel()
			}
		}},
	}, agent{cfg: cfg}.handle)
	if err != nil {
		return err
	}
	fmt.Printf("worker %s: claiming %q runs of release %s/%s at %s\n", w.HolderID(), cfg.kind, cfg.release, cfg.adapter, cfg.url)
	return w.Run(wctx)
}

// register makes sure the release the worker runs is registered and active.
func register(ctx context.Context, c *client.Client, cfg config) error {
	refs, hash := client.ManifestOf("toy://agents/" + cfg.release + "/" + cfg.adapter)
	r, _, err := c.PutRelease(ctx, cfg.release, cfg.adapter, api.PutReleaseRequest{
		ManifestHash: hash, ContentRefs: refs, State: api.Ptr(api.ReleaseActive),
	}, "")
	if errors.Is(err, client.ErrPreconditionRequired) {
		// Registered earlier and moved since (draining, say): make it active again.
		r, err = c.UpdateRelease(ctx, cfg.release, cfg.adapter, func(req *api.PutReleaseRequest) error {
			req.State = api.Ptr(api.ReleaseActive)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("register release %s/%s: %w", cfg.release, cfg.adapter, err)
	}
	if r.State != api.ReleaseActive {
		return fmt.Errorf("release %s/%s is %s", cfg.release, cfg.adapter, r.State)
	}
	return nil
}

// enqueue queues cfg.enqueue runs, creating the project first when an admin key is given.
func enqueue(ctx context.Context, cfg config) error {
	if cfg.adminKey != "" {
		admin, err := client.New(client.WithBaseURL(cfg.url), client.WithKey(cfg.adminKey))
		if err != nil {
			return err
		}
		_, _, err = admin.PutProject(ctx, cfg.project, api.PutProjectRequest{}, "")
		if err != nil && !errors.Is(err, client.ErrPreconditionRequired) { // it exists already
			return fmt.Errorf("create project %s: %w", cfg.project, err)
		}
	}
	c, err := client.New(client.WithBaseURL(cfg.url), client.WithKey(cfg.key))
	if err != nil {
		return err
	}
	for i := range cfg.enqueue {
		id := uuid.New()
		r, err := c.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{
			Subject: "toy:" + id.String(), Kind: cfg.kind, ProjectID: cfg.project, AgentID: "toy-agent",
			StepID: uuid.New(), SnapshotID: uuid.New(), IdempotencyKey: api.Ptr("toy-" + id.String()),
		}})
		if errors.Is(err, client.ErrUnknownProject) {
			return fmt.Errorf("project %q does not exist: give an admin key (LEDGER_ADMIN_KEY) to create it", cfg.project)
		}
		if err != nil {
			return fmt.Errorf("enqueue run %d: %w", i+1, err)
		}
		fmt.Printf("run %s: enqueued\n", r.RunID)
	}
	return nil
}

// agent is the toy agent: its state is the number of steps done, kept in the checkpoint's
// state reference as "step=N".
type agent struct{ cfg config }

// toolStep is the step that makes the tool call.
const toolStep = 1

func (a agent) handle(ctx context.Context, l *client.Lease) error {
	id := l.RunID()
	last, err := l.Resume(ctx)
	if err != nil {
		return err
	}
	done := 0
	if last != nil {
		if done, err = strconv.Atoi(strings.TrimPrefix(last.AdapterStateRef, "step=")); err != nil {
			return client.Permanent(fmt.Errorf("checkpoint state %q: %w", last.AdapterStateRef, err))
		}
		fmt.Printf("run %s: resuming after step %d of %d (attempt %d)\n", id, done, a.cfg.steps, l.Run().AttemptsSpent+1)
	} else {
		fmt.Printf("run %s: starting, %d steps\n", id, a.cfg.steps)
	}
	for step := done; step < a.cfg.steps; step++ {
		if step == toolStep {
			// The tool call is recorded with its outcome; a resume after this step's
			// checkpoint does not make it again.
			if err := l.Call(ctx, client.CallInput{Kind: api.CallTool, Target: "toy.search"}, func(ctx context.Context) (string, error) {
				return "toy-receipt-" + id.String()[:8], sleep(ctx, a.cfg.stepTime/4)
			}); err != nil {
				return err
			}
		}
		if a.cfg.decision && step == a.cfg.steps/2 {
			// Decide asks under a key derived from the step, so a resumed run gets the same
			// decision (and its answer) instead of asking again; it parks the run (returning
			// ErrParked) past the park bound or when the worker is stopping.
			fmt.Printf("run %s: waiting for approval at step %d (answer it in the decision inbox)\n", id, step)
			d, err := l.Decide(ctx, client.DecisionInput{Kind: api.DecisionApproval, Recommendation: api.Ptr("carry on"),
				Key: fmt.Sprintf("approve-step-%d", step)})
			if errors.Is(err, client.ErrParked) {
				fmt.Printf("run %s: parked until the decision is answered\n", id)
				return err
			}
			if err != nil {
				return err
			}
			fmt.Printf("run %s: decision %s %s\n", id, d.DecisionID, d.Status)
			if d.Status != api.DecisionApproved {
				return client.Permanent(fmt.Errorf("decision %s", d.Status))
			}
		}
		if err := sleep(ctx, a.cfg.stepTime); err != nil {
			return err
		}
		phase := api.PhaseActing
		if step+1 == a.cfg.steps {
			phase = api.PhaseFinalizing
		}
		if _, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: phase, StateRef: fmt.Sprintf("step=%d", step+1)}); err != nil {
			return err
		}
		fmt.Printf("run %s: step %d/%d done\n", id, step+1, a.cfg.steps)
	}
	return nil
}

// sleep waits d or until ctx ends (with its cause).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
