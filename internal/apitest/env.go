package apitest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// LeaseSeconds is the lease every Env claim takes.
const LeaseSeconds = 60

// Env is one store-level case's world: a database with an injected clock, the run-lease
// core and a fresh tenant with a project p1.
type Env struct {
	T      *testing.T
	DB     *sqldb.DB
	Clock  *dbtest.Clock
	Svc    *runs.Service
	Tenant string
	Caller runs.Caller
	Ctx    context.Context

	otherKeyID string
}

// EnvConfig says how to build an Env beyond the defaults of NewEnv.
type EnvConfig struct {
	// Epoch is where the injected clock starts.
	Epoch time.Time
	// Logger is the run-lease core's logger (nil: its default).
	Logger *slog.Logger
	// Config, when set, adjusts the run-lease core's configuration.
	Config func(*runs.Config)
	// Hooks are added to the run-lease core: those of the store under test, since an Env
	// holds one store in isolation. The service's whole set (with its rule that a claim
	// names an active release of the tenant) is the Stack's: New builds it through app.New.
	Hooks []runs.Hooks
	// KeyID and OtherKeyID are the callers' key ids of the first tenant and of those
	// Other makes ("test-key" when empty).
	KeyID, OtherKeyID string
}

// NewEnv opens a database of tgt with a clock at epoch and makes a tenant.
func NewEnv(t *testing.T, tgt dbtest.Target, epoch time.Time) *Env {
	t.Helper()
	return NewEnvWith(t, tgt, EnvConfig{Epoch: epoch})
}

// NewEnvWith is NewEnv configured by cfg.
func NewEnvWith(t *testing.T, tgt dbtest.Target, cfg EnvConfig) *Env {
	t.Helper()
	clock := dbtest.NewClock(cfg.Epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	rc := runs.DefaultConfig()
	if cfg.Config != nil {
		cfg.Config(&rc)
	}
	svc := runs.NewService(db, rc, cfg.Logger)
	for _, h := range cfg.Hooks {
		svc.AddHooks(h)
	}
	e := &Env{T: t, DB: db, Clock: clock, Svc: svc, Ctx: context.Background(), otherKeyID: keyOr(cfg.OtherKeyID)}
	e.setTenant(keyOr(cfg.KeyID))
	// Every case ends with the run-lease core's invariants whole: attempts agree with their
	// runs, head markers are their definition, leased counts count the leased runs.
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		if n, err := svc.TenantDisagreements(context.Background(), e.Tenant); err != nil || n != 0 {
			t.Errorf("the case left %d disagreements of the run-lease core's invariants (%v)", n, err)
		}
	})
	return e
}

func keyOr(id string) string {
	if id == "" {
		return "test-key"
	}
	return id
}

// Other is a second tenant on the same database.
func (e *Env) Other(t *testing.T) *Env {
	t.Helper()
	o := &Env{T: t, DB: e.DB, Clock: e.Clock, Svc: e.Svc, Ctx: e.Ctx, otherKeyID: e.otherKeyID}
	o.setTenant(e.otherKeyID)
	return o
}

func (e *Env) setTenant(keyID string) {
	e.Tenant = dbtest.NewTenant(e.T, e.DB)
	e.Caller = runs.Caller{TenantID: e.Tenant, KeyID: keyID}
	if _, _, err := projects.NewStore(e.DB).Put(e.Ctx, e.Tenant, "p1", projects.Change{}); err != nil {
		e.T.Fatalf("create project: %v", err)
	}
}

// subjects numbers the subjects of runs the harness enqueues, so each is its own.
var subjects atomic.Int64

// Enqueue queues a run on a subject of its own.
func (e *Env) Enqueue() runs.Run {
	e.T.Helper()
	r, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, runs.Spec{
		ProjectID: "p1", Subject: fmt.Sprintf("subject-%d", subjects.Add(1)), Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 10, MaxCorrections: 3,
	})
	if err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	return r
}

// Claim leases the tenant's next due run.
func (e *Env) Claim() runs.Claimed {
	e.T.Helper()
	cl, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{
		HolderID: "holder-1", ReleaseID: "rel-1", AdapterVersion: "1.0", ModelProfileID: "model-a", LeaseSeconds: LeaseSeconds,
	})
	if err != nil {
		e.T.Fatalf("claim: %v", err)
	}
	return cl
}

// Lease enqueues a run and claims it.
func (e *Env) Lease() runs.Claimed {
	e.T.Helper()
	e.Enqueue()
	return e.Claim()
}

// Release gives the attempt's run back, due at once.
func (e *Env) Release(cl runs.Claimed) {
	e.T.Helper()
	now := time.Duration(0)
	if _, err := e.Svc.Release(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{RetryAfter: &now}); err != nil {
		e.T.Fatalf("release: %v", err)
	}
}

// Complete ends the attempt and its run as succeeded.
func (e *Env) Complete(cl runs.Claimed) {
	e.T.Helper()
	if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		runs.Completion{State: api.AttemptSucceeded}); err != nil {
		e.T.Fatalf("complete: %v", err)
	}
}

// Statements counts the statements every transaction of db sends from now on (through the
// statement hook) until the returned stop is called, which answers them in order (the
// first words of each). For tests that bound a request's cost in statements.
func Statements(db *sqldb.DB) (stop func() []string) {
	var mu sync.Mutex
	var seen []string
	db.SetStatementHook(func(_ context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		words := strings.Fields(st.Query)
		mu.Lock()
		seen = append(seen, strings.Join(words[:min(4, len(words))], " "))
		mu.Unlock()
		return nil
	})
	return func() []string {
		db.SetStatementHook(nil)
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}
