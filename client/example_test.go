package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// exampleService starts the service in process on a temporary database, as `ledger serve`
// would, and returns its URL and an admin and a runtime key of a new tenant.
func exampleService() (url, adminKey, runtimeKey string, stop func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ledger-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: filepath.Join(dir, "ledger.db")})
	if err != nil {
		log.Fatal(err)
	}
	mg, err := migrate.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		log.Fatal(err)
	}
	mg.Close()
	a := app.New(db, app.Config{Logger: quiet(), PurgeInterval: -1})
	hs := httptest.NewServer(a.Server.Echo)
	adminKey, _, err = a.Keys.CreateKey(ctx, "example", tenancy.RoleAdmin)
	if err != nil {
		log.Fatal(err)
	}
	runtimeKey, _, err = a.Keys.CreateKey(ctx, "example", tenancy.RoleRuntime)
	if err != nil {
		log.Fatal(err)
	}
	return hs.URL, adminKey, runtimeKey, func() { hs.Close(); db.Close(); os.RemoveAll(dir) }
}

// exampleSetup makes project "reviews" and registers release reviewer/1.0, active.
func exampleSetup(ctx context.Context, admin, runtime *client.Client) {
	if _, _, err := admin.PutProject(ctx, "reviews", api.PutProjectRequest{}, ""); err != nil {
		log.Fatal(err)
	}
	refs, hash := client.ManifestOf("oci://agents/reviewer@sha256:4f2a")
	if _, _, err := runtime.PutRelease(ctx, "reviewer", "1.0", api.PutReleaseRequest{
		ManifestHash: hash, ContentRefs: refs, State: api.Ptr(api.ReleaseActive),
	}, ""); err != nil {
		log.Fatal(err)
	}
}

func Example() {
	url, adminKey, runtimeKey, stop := exampleService()
	defer stop()
	ctx := context.Background()

	admin, _ := client.New(client.WithBaseURL(url), client.WithKey(adminKey))
	runtime, err := client.New(client.WithBaseURL(url), client.WithKey(runtimeKey))
	if err != nil {
		log.Fatal(err)
	}
	exampleSetup(ctx, admin, runtime)

	// Enqueue a run; the idempotency key makes a repeat (and so a retry) answer this run.
	run, err := runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{
		Subject: "review:42", Kind: "review", ProjectID: "reviews", AgentID: "reviewer",
		StepID: uuid.New(), SnapshotID: uuid.New(), IdempotencyKey: api.Ptr("pr-42-opened"),
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Subject, run.State)

	_, err = runtime.GetRun(ctx, uuid.New())
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// review:42 queued
	// true
}

func ExampleWorker() {
	url, adminKey, runtimeKey, stop := exampleService()
	defer stop()
	ctx := context.Background()
	admin, _ := client.New(client.WithBaseURL(url), client.WithKey(adminKey))
	runtime, _ := client.New(client.WithBaseURL(url), client.WithKey(runtimeKey))
	exampleSetup(ctx, admin, runtime)
	run, err := runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{
		Subject: "review:7", Kind: "review", ProjectID: "reviews", AgentID: "reviewer",
		StepID: uuid.New(), SnapshotID: uuid.New(),
	}})
	if err != nil {
		log.Fatal(err)
	}

	done := make(chan client.Result, 1)
	w, err := client.NewWorker(runtime, client.WorkerConfig{
		ReleaseID: "reviewer", AdapterVersion: "1.0", ModelProfileID: "model-a",
		Kinds: []string{"review"}, Concurrency: 4, Logger: quiet(),
		WaitSeconds: 1, // short long polls, so that the example stops soon
		Hooks:       client.Hooks{Finished: func(r client.Result) { done <- r }},
	}, func(ctx context.Context, l *client.Lease) error {
		// Carry on after the last checkpoint of the run's chain (none for a fresh run).
		last, err := l.Resume(ctx)
		if err != nil {
			return err
		}
		step := 0
		if last != nil {
			fmt.Sscan(last.AdapterStateRef, &step)
		}
		for ; step < 3; step++ {
			// ... one step of the agent's work ...
			if _, err := l.Checkpoint(ctx, client.CheckpointInput{
				Phase: api.PhaseActing, StateRef: fmt.Sprint(step + 1),
			}); err != nil {
				return err // the lease is lost, or the ledger is unreachable: released for another try
			}
		}
		return nil // completes the attempt and the run as succeeded
	})
	if err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go func() { <-done; cancel() }() // stop after one run, for the example
	if err := w.Run(wctx); err != nil {
		log.Fatal(err)
	}

	got, _ := runtime.GetRun(ctx, run.RunID)
	last, _ := runtime.LastCheckpoint(ctx, run.RunID)
	fmt.Println(got.State, *got.Outcome, "at checkpoint", last.AdapterStateRef)
	// Output: ended succeeded at checkpoint 3
}

func ExampleLease_Decide() {
	url, adminKey, runtimeKey, stop := exampleService()
	defer stop()
	ctx := context.Background()
	admin, _ := client.New(client.WithBaseURL(url), client.WithKey(adminKey))
	runtime, _ := client.New(client.WithBaseURL(url), client.WithKey(runtimeKey),
		client.WithPolling(10*time.Millisecond, 100*time.Millisecond))
	exampleSetup(ctx, admin, runtime)
	if _, err := runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{
		Subject: "deploy:9", Kind: "deploy", ProjectID: "reviews", AgentID: "deployer",
		StepID: uuid.New(), SnapshotID: uuid.New(),
	}}); err != nil {
		log.Fatal(err)
	}
	cl, err := runtime.ClaimRun(ctx, api.ClaimRequest{
		HolderID: "example", ReleaseID: "reviewer", AdapterVersion: "1.0", ModelProfileID: "model-a",
	})
	if err != nil || cl == nil {
		log.Fatal(cl, err)
	}
	l := client.NewLease(runtime, *cl)

	// A person answers from the inbox (admin key), here after the request is made.
	go func() {
		for {
			for d, err := range admin.Decisions(ctx, api.ListDecisionsParams{Status: api.Ptr(api.DecisionPending)}) {
				if err == nil {
					_, _ = admin.AnswerPending(ctx, d.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved})
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	d, err := l.Decide(ctx, client.DecisionInput{Kind: api.DecisionApproval, Recommendation: api.Ptr("deploy v9")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decision", d.Status)
	if _, err := l.Complete(ctx, api.CompleteSucceeded, nil); err != nil {
		log.Fatal(err)
	}
	_, err = l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: "late"})
	fmt.Println(errors.Is(err, client.ErrLeaseEnded))
	// Output:
	// decision approved
	// true
}

func ExampleClient_Changes() {
	url, adminKey, runtimeKey, stop := exampleService()
	defer stop()
	ctx := context.Background()
	admin, _ := client.New(client.WithBaseURL(url), client.WithKey(adminKey))
	runtime, _ := client.New(client.WithBaseURL(url), client.WithKey(runtimeKey))
	exampleSetup(ctx, admin, runtime)
	for i := range 2 {
		if _, err := runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{
			Subject: fmt.Sprint("feed:", i), Kind: "review", ProjectID: "reviews", AgentID: "reviewer",
			StepID: uuid.New(), SnapshotID: uuid.New(),
		}}); err != nil {
			log.Fatal(err)
		}
		if _, err := runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: "reviewer", AdapterVersion: "1.0", ModelProfileID: "m"}); err != nil {
			log.Fatal(err)
		}
	}

	// Read every attempt changed since the start; keep the last ETag to continue later.
	since := client.FeedStart
	for a, err := range admin.Changes(ctx, since) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(a.State, a.Phase)
		since = a.ETag
	}
	// Output:
	// running starting
	// running starting
}
