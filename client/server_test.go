package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// server is the real service in process: internal/app over a fresh SQLite file with an
// injected clock (time moves only when a test advances it), behind a real listener.
type server struct {
	App   *app.App
	DB    *sqldb.DB
	Clock *dbtest.Clock
	URL   string

	Tenant  string
	Admin   *client.Client
	Runtime *client.Client
	// RuntimeKey is the runtime client's key, for further clients.
	RuntimeKey string
}

// Release names of the release every test server registers, active.
const (
	testRelease = "rel-sdk"
	testAdapter = "1.0"
	testModel   = "model-a"
)

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// testLogger is quiet unless LEDGER_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("LEDGER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return quiet()
}

// newServer starts a service configured by cfg (its Logger and PurgeInterval are set
// here), with a tenant, its admin and runtime clients, a project p1 and an active release.
func newServer(t testing.TB, cfg app.Config) *server {
	t.Helper()
	cfg.Logger = testLogger()
	cfg.PurgeInterval = -1
	st := apitest.New(t, apitest.Config{Epoch: time.Now(), App: cfg, Serve: true})
	s := &server{App: st.App, DB: st.DB, Clock: st.Clock, URL: st.URL}
	s.Tenant = dbtest.NewTenant(t, st.DB)
	_, s.Admin = s.newClient(t, tenancy.RoleAdmin)
	s.RuntimeKey, s.Runtime = s.newClient(t, tenancy.RoleRuntime)
	ctx := context.Background()
	if _, _, err := s.Admin.PutProject(ctx, "p1", api.PutProjectRequest{}, ""); err != nil {
		t.Fatalf("create project: %v", err)
	}
	refs, hash := client.ManifestOf("oci://agents/sdk@sha256:abc")
	if _, _, err := s.Runtime.PutRelease(ctx, testRelease, testAdapter, api.PutReleaseRequest{
		ManifestHash: hash, ContentRefs: refs, State: api.Ptr(api.ReleaseActive),
	}, ""); err != nil {
		t.Fatalf("register release: %v", err)
	}
	return s
}

// newClient makes a key of role for the server's tenant and a client with it.
func (s *server) newClient(t testing.TB, role string, opts ...client.Option) (string, *client.Client) {
	t.Helper()
	key, _, err := s.App.Keys.CreateKey(context.Background(), s.Tenant, role)
	if err != nil {
		t.Fatal(err)
	}
	return key, s.client(t, key, opts...)
}

// client is a client of the server with key; polls are quick.
func (s *server) client(t testing.TB, key string, opts ...client.Option) *client.Client {
	t.Helper()
	all := append([]client.Option{client.WithBaseURL(s.URL), client.WithKey(key),
		client.WithPolling(5*time.Millisecond, 50*time.Millisecond)}, opts...)
	c, err := client.New(all...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// subjects numbers the subjects of enqueued runs so each test run has its own.
var subjects atomic.Int64

// spec is a run of project p1 on a subject of its own.
func spec(kind string) api.RunSpec {
	return api.RunSpec{
		Subject: fmt.Sprintf("subject-%d", subjects.Add(1)), Kind: kind, ProjectID: "p1", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), MaxAttempts: api.Ptr(5),
	}
}

// enqueue queues a run of kind.
func (s *server) enqueue(t testing.TB, kind string) api.Run {
	t.Helper()
	r, err := s.Runtime.EnqueueRun(context.Background(), api.EnqueueRequest{RunSpec: spec(kind)})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return r
}

// workerConfig is a worker of the test release that renews quickly and claims kind.
func workerConfig(kind string) client.WorkerConfig {
	return client.WorkerConfig{
		ReleaseID: testRelease, AdapterVersion: testAdapter, ModelProfileID: testModel,
		Kinds: []string{kind}, LeaseSeconds: 60, WaitSeconds: 1,
		HeartbeatEvery: 20 * time.Millisecond, ShutdownGrace: time.Minute, Logger: testLogger(),
	}
}

// startWorker runs a worker until the test ends (or stop is called); stop waits for Run to
// return and gives its error.
func startWorker(t testing.TB, c *client.Client, cfg client.WorkerConfig, h client.Handler) (stop func() error) {
	t.Helper()
	w, err := client.NewWorker(c, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var stopped atomic.Bool
	var result error
	stop = func() error {
		if stopped.CompareAndSwap(false, true) {
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// recv waits for a value from ch, failing the test if none comes within a minute (a hang,
// not a timing expectation).
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}

// row reads one value of the database, for checks that go around the API.
func (s *server) row(t testing.TB, dst any, query string, args ...any) {
	t.Helper()
	if err := s.DB.Raw().GetContext(context.Background(), dst, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
