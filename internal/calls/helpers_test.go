package calls_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// leaseSeconds is the lease every test claim takes.
const leaseSeconds = 60

// env is one case's world: a database with an injected clock, the run-lease core, the
// call store and a fresh tenant with a project.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	store  *calls.Store
	tenant string
	caller runs.Caller
	ctx    context.Context
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	e := &env{t: t, db: db, clock: clock, svc: svc, store: calls.NewStore(db, svc), ctx: context.Background()}
	e.setTenant()
	return e
}

// other is a second tenant on the same database.
func (e *env) other(t *testing.T) *env {
	t.Helper()
	o := &env{t: t, db: e.db, clock: e.clock, svc: e.svc, store: e.store, ctx: e.ctx}
	o.setTenant()
	return o
}

func (e *env) setTenant() {
	e.tenant = dbtest.NewTenant(e.t, e.db)
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "test-key"}
	if _, _, err := projects.NewStore(e.db).Put(e.ctx, e.tenant, "p1", projects.Change{}); err != nil {
		e.t.Fatalf("create project: %v", err)
	}
}

var subjects atomic.Int64

// lease enqueues a run on a subject of its own and claims it.
func (e *env) lease() runs.Claimed {
	e.t.Helper()
	if _, _, err := e.svc.Enqueue(e.ctx, e.caller, runs.Spec{
		ProjectID: "p1", Subject: fmt.Sprintf("subject-%d", subjects.Add(1)), Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: runs.Batch, MaxAttempts: 10, MaxCorrections: 3,
	}); err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	return e.claim()
}

func (e *env) claim() runs.Claimed {
	e.t.Helper()
	cl, err := e.svc.Claim(e.ctx, e.caller, runs.ClaimRequest{
		HolderID: "holder-1", ReleaseID: "rel-1", AdapterVersion: "1.0", ModelProfileID: "model-a", LeaseSeconds: leaseSeconds,
	})
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	return cl
}

// release gives the attempt's run back, due at once.
func (e *env) release(cl runs.Claimed) {
	e.t.Helper()
	now := time.Duration(0)
	if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Release{RetryAfter: &now}); err != nil {
		e.t.Fatalf("release: %v", err)
	}
}

// complete ends the attempt and its run as succeeded.
func (e *env) complete(cl runs.Claimed) {
	e.t.Helper()
	if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		runs.Completion{State: attempts.Succeeded}); err != nil {
		e.t.Fatalf("complete: %v", err)
	}
}

func call(seq int, hash string) calls.New {
	return calls.New{Sequence: seq, Kind: calls.Tool, Target: fmt.Sprintf("tool://search/%d", seq), RequestHash: hash}
}

// record writes a call that must be created.
func (e *env) record(cl runs.Claimed, n calls.New) calls.Call {
	e.t.Helper()
	c, created, err := e.store.Record(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil || !created {
		e.t.Fatalf("record sequence %d: created=%v err=%v", n.Sequence, created, err)
	}
	return c
}

func (e *env) get(cl runs.Claimed, id uuid.UUID) calls.Call {
	e.t.Helper()
	c, err := e.store.Get(e.ctx, e.tenant, cl.Attempt.AttemptID, id)
	if err != nil {
		e.t.Fatalf("get call: %v", err)
	}
	return c
}

// all lists every call of the attempt.
func (e *env) all(id uuid.UUID) []calls.Call {
	e.t.Helper()
	cs, err := e.store.List(e.ctx, e.tenant, id, calls.Start, 500)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	return cs
}

func sequences(cs []calls.Call) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Sequence
	}
	return out
}

func ptr[T any](v T) *T { return &v }
