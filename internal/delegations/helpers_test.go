package delegations_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Agents: parents run as parentAgent, children as childAgent, so a claim can pick either.
const (
	parentAgent = "parent-agent"
	childAgent  = "child-agent"
)

// env is one case's world: a database with an injected clock, the run-lease core with the
// delegation hooks, the delegation store and a fresh tenant with project p1.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	store  *delegations.Store
	tenant string
	caller runs.Caller
	ctx    context.Context
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func newEnv(t *testing.T, tgt dbtest.Target, mut ...func(*runs.Config)) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	cfg := runs.DefaultConfig()
	for _, m := range mut {
		m(&cfg)
	}
	svc := runs.NewService(db, cfg, quiet())
	svc.AddHooks(delegations.Hooks())
	e := &env{t: t, db: db, clock: clock, svc: svc, store: delegations.NewStore(db, svc), ctx: context.Background()}
	e.tenant = dbtest.NewTenant(t, db)
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "runtime-key"}
	e.project()
	return e
}

func (e *env) project() {
	e.t.Helper()
	if _, _, err := projects.NewStore(e.db).Put(e.ctx, e.tenant, "p1", projects.Change{}); err != nil {
		e.t.Fatalf("create project: %v", err)
	}
}

// other is a second tenant on the same database and services.
func (e *env) other() *env {
	e.t.Helper()
	o := *e
	o.tenant = dbtest.NewTenant(e.t, e.db)
	o.caller = runs.Caller{TenantID: o.tenant, KeyID: "other-key"}
	o.project()
	return &o
}

func spec(subject, agent string, opts ...func(*runs.Spec)) runs.Spec {
	s := runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: agent, StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: runs.Batch, MaxAttempts: 3, MaxCorrections: 3}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func (e *env) enqueue(s runs.Spec) runs.Run {
	e.t.Helper()
	r, _, err := e.svc.Enqueue(e.ctx, e.caller, s)
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	return r
}

// claim claims the next run of agent.
func (e *env) claim(agent string) runs.Claimed {
	e.t.Helper()
	cl, err := e.svc.Claim(e.ctx, e.caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
		ModelProfileID: "m", AgentIDs: []string{agent}})
	if err != nil {
		e.t.Fatalf("claim %s: %v", agent, err)
	}
	return cl
}

// parent enqueues and claims a parent run on subject.
func (e *env) parent(subject string) runs.Claimed {
	e.t.Helper()
	e.enqueue(spec(subject, parentAgent))
	return e.claim(parentAgent)
}

func request(subject string, opts ...func(*runs.Spec)) delegations.Request {
	return delegations.Request{ChildAgentID: childAgent, Purpose: "review the diff", Child: spec(subject, childAgent, opts...)}
}

// delegate creates a delegation under the claim's lease.
func (e *env) delegate(cl runs.Claimed, r delegations.Request) delegations.Delegation {
	e.t.Helper()
	d, created, err := e.store.Create(e.ctx, e.caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, r)
	if err != nil || !created {
		e.t.Fatalf("delegate: created=%v err=%v", created, err)
	}
	return d
}

func (e *env) get(id uuid.UUID) delegations.Delegation {
	e.t.Helper()
	d, err := e.store.Get(e.ctx, e.tenant, id)
	if err != nil {
		e.t.Fatalf("get delegation %s: %v", id, err)
	}
	return d
}

// wantStatus reads a delegation's status and checks its version grew past the last one seen.
func (e *env) wantStatus(d *delegations.Delegation, want string) {
	e.t.Helper()
	got := e.get(d.DelegationID)
	if got.Status != want {
		e.t.Fatalf("delegation status %s, want %s", got.Status, want)
	}
	if got.Version <= d.Version {
		e.t.Fatalf("status moved %s -> %s but the version stayed %d", d.Status, got.Status, got.Version)
	}
	*d = got
}

func (e *env) complete(cl runs.Claimed, state attempts.State) {
	e.t.Helper()
	if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: state}); err != nil {
		e.t.Fatalf("complete %s: %v", state, err)
	}
}

// count is how many rows of table the tenant has.
func (e *env) count(table string) int {
	e.t.Helper()
	var n int
	err := e.db.Read(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(e.ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE TenantId = ?`), e.tenant)
	})
	if err != nil {
		e.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }
