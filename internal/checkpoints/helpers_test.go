package checkpoints_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// leaseSeconds is the lease every test claim takes.
const leaseSeconds = 60

// env is one case's world: a database with an injected clock, the run-lease core, the
// checkpoint store and a fresh tenant with a project.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	store  *checkpoints.Store
	tenant string
	caller runs.Caller
	ctx    context.Context
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	e := &env{t: t, db: db, clock: clock, svc: svc, store: checkpoints.NewStore(db, svc), ctx: context.Background()}
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

// enqueue queues a run on a subject of its own.
func (e *env) enqueue() runs.Run {
	e.t.Helper()
	r, _, err := e.svc.Enqueue(e.ctx, e.caller, runs.Spec{
		ProjectID: "p1", Subject: fmt.Sprintf("subject-%d", subjects.Add(1)), Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: runs.Batch, MaxAttempts: 10, MaxCorrections: 3,
	})
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	return r
}

// claim leases the tenant's next due run.
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

// lease enqueues a run and claims it.
func (e *env) lease() runs.Claimed {
	e.t.Helper()
	e.enqueue()
	return e.claim()
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

func cp(seq int, hash string) checkpoints.New {
	ref := fmt.Sprintf("ctx://snap/%d", seq)
	return checkpoints.New{
		Sequence: seq, Phase: attempts.Acting, AdapterStateRef: fmt.Sprintf("blob://state/%d", seq),
		AdapterVersion: "1.0", ContextSnapshotRef: &ref, Hash: hash,
	}
}

// append writes a checkpoint that must be created.
func (e *env) append(cl runs.Claimed, n checkpoints.New) checkpoints.Checkpoint {
	e.t.Helper()
	c, created, err := e.store.Append(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil || !created {
		e.t.Fatalf("append sequence %d: created=%v err=%v", n.Sequence, created, err)
	}
	return c
}

// attempt reads an attempt of the tenant.
func (e *env) attempt(id uuid.UUID) attempts.Attempt {
	e.t.Helper()
	var a attempts.Attempt
	err := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
		var err error
		a, err = attempts.Get(e.ctx, tx, e.tenant, id)
		return err
	})
	if err != nil {
		e.t.Fatalf("read attempt: %v", err)
	}
	return a
}

// all lists every checkpoint of the attempt.
func (e *env) all(id uuid.UUID) []checkpoints.Checkpoint {
	e.t.Helper()
	cs, err := e.store.List(e.ctx, e.tenant, id, checkpoints.Start, 500)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	return cs
}

func sequences(cs []checkpoints.Checkpoint) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Sequence
	}
	return out
}
