package delegations_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/delegations"
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
	*apitest.Env
	store *delegations.Store
}

func newEnv(t *testing.T, tgt dbtest.Target, mut ...func(*runs.Config)) *env {
	t.Helper()
	e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch, Logger: apitest.Quiet(), Hooks: []runs.Hooks{delegations.Hooks()},
		KeyID: "runtime-key", OtherKeyID: "other-key", Config: func(cfg *runs.Config) {
			for _, m := range mut {
				m(cfg)
			}
		}})
	return &env{Env: e, store: delegations.NewStore(e.DB, e.Svc)}
}

// other is a second tenant on the same database and services.
func (e *env) other() *env {
	e.T.Helper()
	return &env{Env: e.Env.Other(e.T), store: e.store}
}

func spec(subject, agent string, opts ...func(*runs.Spec)) runs.Spec {
	s := runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: agent, StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func (e *env) enqueue(s runs.Spec) runs.Run {
	e.T.Helper()
	r, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, s)
	if err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	return r
}

// claim claims the next run of agent.
func (e *env) claim(agent string) runs.Claimed {
	e.T.Helper()
	cl, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1",
		ModelProfileID: "m", AgentIDs: []string{agent}})
	if err != nil {
		e.T.Fatalf("claim %s: %v", agent, err)
	}
	return cl
}

// parent enqueues and claims a parent run on subject.
func (e *env) parent(subject string) runs.Claimed {
	e.T.Helper()
	e.enqueue(spec(subject, parentAgent))
	return e.claim(parentAgent)
}

func request(subject string, opts ...func(*runs.Spec)) delegations.Request {
	return delegations.Request{Purpose: "review the diff", Child: spec(subject, childAgent, opts...)}
}

// delegate creates a delegation under the claim's lease.
func (e *env) delegate(cl runs.Claimed, r delegations.Request) delegations.Delegation {
	e.T.Helper()
	d, created, err := e.store.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, r)
	if err != nil || !created {
		e.T.Fatalf("delegate: created=%v err=%v", created, err)
	}
	return d
}

func (e *env) get(id uuid.UUID) delegations.Delegation {
	e.T.Helper()
	d, err := e.store.Get(e.Ctx, e.Tenant, id)
	if err != nil {
		e.T.Fatalf("get delegation %s: %v", id, err)
	}
	return d
}

// wantStatus reads a delegation's status and checks its version grew past the last one seen.
func (e *env) wantStatus(d *delegations.Delegation, want api.DelegationStatus) {
	e.T.Helper()
	got := e.get(d.DelegationID)
	if got.Status != want {
		e.T.Fatalf("delegation status %s, want %s", got.Status, want)
	}
	if got.Version <= d.Version {
		e.T.Fatalf("status moved %s -> %s but the version stayed %d", d.Status, got.Status, got.Version)
	}
	*d = got
}

func (e *env) complete(cl runs.Claimed, state api.AttemptState) {
	e.T.Helper()
	if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: state}); err != nil {
		e.T.Fatalf("complete %s: %v", state, err)
	}
}

// count is how many rows of table the tenant has.
func (e *env) count(table string) int {
	e.T.Helper()
	var n int
	err := e.DB.Read(e.Ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(e.Ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE TenantId = ?`), e.Tenant)
	})
	if err != nil {
		e.T.Fatalf("count %s: %v", table, err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }
