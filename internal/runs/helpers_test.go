package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// epoch is in this package's own clock range (dbtest.PackageEpoch), so its reapers and
// another package's never take each other's leases on a shared database.
var epoch = dbtest.PackageEpoch(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

// env is one case's world: a database with an injected clock, a service and a tenant.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	tenant string
	caller runs.Caller
	ctx    context.Context
}

func newEnv(t *testing.T, tgt dbtest.Target, mut ...func(*runs.Config)) *env {
	t.Helper()
	return newEnvAt(t, tgt, epoch, mut...)
}

// newEnvAt is newEnv with its clock at start.
func newEnvAt(t *testing.T, tgt dbtest.Target, start time.Time, mut ...func(*runs.Config)) *env {
	t.Helper()
	clock := dbtest.NewClock(start)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	cfg := runs.DefaultConfig()
	cfg.PollInterval = 20 * time.Millisecond
	for _, m := range mut {
		m(&cfg)
	}
	e := &env{t: t, db: db, clock: clock, svc: runs.NewService(db, cfg, nil), ctx: context.Background()}
	e.tenant = dbtest.NewTenant(t, db)
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "test-key"}
	e.project("p1")
	return e
}

func (e *env) project(id string) {
	e.t.Helper()
	if _, _, err := projects.NewStore(e.db).Put(e.ctx, e.tenant, id, projects.Change{}); err != nil {
		e.t.Fatalf("create project %s: %v", id, err)
	}
}

func (e *env) pause(id string) {
	e.t.Helper()
	store := projects.NewStore(e.db)
	p, err := store.Get(e.ctx, e.tenant, id)
	if err != nil {
		e.t.Fatal(err)
	}
	off := false
	if _, _, err := store.Put(e.ctx, e.tenant, id, projects.Change{Active: &off, IfMatch: &p.Version}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setBudget(n int) {
	e.t.Helper()
	if err := tenancy.NewStore(e.db).SetMaxLeased(e.ctx, e.tenant, n); err != nil {
		e.t.Fatal(err)
	}
}

func spec(subject string, opts ...func(*runs.Spec)) runs.Spec {
	s := runs.Spec{
		ProjectID: "p1", Subject: subject, Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3,
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func (e *env) enqueue(s runs.Spec) runs.Run {
	e.t.Helper()
	r, created, err := e.svc.Enqueue(e.ctx, e.caller, s)
	if err != nil || !created {
		e.t.Fatalf("enqueue %s: created=%v err=%v", s.Subject, created, err)
	}
	e.agree()
	return r
}

func claimReq(holder string) runs.ClaimRequest {
	return runs.ClaimRequest{HolderID: holder, ReleaseID: "rel-1", AdapterVersion: "1.0", ModelProfileID: "model-a"}
}

func (e *env) claim() runs.Claimed {
	e.t.Helper()
	cl, err := e.svc.Claim(e.ctx, e.caller, claimReq("holder-1"))
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	e.agree()
	return cl
}

func (e *env) get(id uuid.UUID) runs.Run {
	e.t.Helper()
	r, err := e.svc.Get(e.ctx, e.tenant, id)
	if err != nil {
		e.t.Fatalf("get run %s: %v", id, err)
	}
	return r
}

// agree fails the test when any attempt and run disagree.
func (e *env) agree() {
	e.t.Helper()
	n, err := e.svc.TenantDisagreements(e.ctx, e.tenant)
	if err != nil {
		e.t.Fatalf("check agreement: %v", err)
	}
	if n != 0 {
		e.t.Fatalf("%d disagreements: attempts and runs, head markers or leased counts", n)
	}
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
