package decisions_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is one case's world: a database with an injected clock, the run-lease core with the
// decision hooks, the decision store and a fresh tenant with project p1.
type env struct {
	t      *testing.T
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	store  *decisions.Store
	tenant string
	caller runs.Caller
	ctx    context.Context
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	svc := runs.NewService(db, runs.DefaultConfig(), quiet())
	svc.AddHooks(decisions.Hooks())
	e := &env{t: t, db: db, clock: clock, svc: svc, store: decisions.NewStore(db, svc), ctx: context.Background()}
	e.tenant = dbtest.NewTenant(t, db)
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "runtime-key"}
	if _, _, err := projects.NewStore(db).Put(e.ctx, e.tenant, "p1", projects.Change{}); err != nil {
		t.Fatalf("create project: %v", err)
	}
	return e
}

// other is a second tenant on the same database and services.
func (e *env) other() *env {
	e.t.Helper()
	o := *e
	o.tenant = dbtest.NewTenant(e.t, e.db)
	o.caller = runs.Caller{TenantID: o.tenant, KeyID: "other-key"}
	if _, _, err := projects.NewStore(e.db).Put(e.ctx, o.tenant, "p1", projects.Change{}); err != nil {
		e.t.Fatalf("create project: %v", err)
	}
	return &o
}

// claimed enqueues a run on subject and claims it: the attempt runs at fencing token 1.
func (e *env) claimed(subject string) runs.Claimed {
	e.t.Helper()
	spec := runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: "agent-1", StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: runs.Batch, MaxAttempts: 3, MaxCorrections: 3}
	if _, _, err := e.svc.Enqueue(e.ctx, e.caller, spec); err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	cl, err := e.svc.Claim(e.ctx, e.caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	return cl
}

// ask requests a decision under the claim's lease.
func (e *env) ask(cl runs.Claimed, r decisions.Request) decisions.Decision {
	e.t.Helper()
	d, err := e.store.Request(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, r)
	if err != nil {
		e.t.Fatalf("request decision: %v", err)
	}
	return d
}

func (e *env) get(id uuid.UUID) decisions.Decision {
	e.t.Helper()
	d, err := e.store.Get(e.ctx, e.tenant, id)
	if err != nil {
		e.t.Fatalf("get decision %s: %v", id, err)
	}
	return d
}

func (e *env) attempt(id uuid.UUID) attempts.Attempt {
	e.t.Helper()
	var a attempts.Attempt
	err := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
		var err error
		a, err = attempts.Get(e.ctx, tx, e.tenant, id)
		return err
	})
	if err != nil {
		e.t.Fatalf("get attempt: %v", err)
	}
	return a
}

// stored reads the Status column as stored, bypassing the read-time expiry.
func (e *env) stored(id uuid.UUID) string {
	e.t.Helper()
	var s string
	e.rawGet(&s, `SELECT Status FROM DecisionRequests WHERE DecisionId = ?`, id)
	return s
}

// count is how many decisions the tenant has.
func (e *env) count() int {
	e.t.Helper()
	var n int
	e.rawGet(&n, `SELECT COUNT(*) FROM DecisionRequests WHERE TenantId = ?`, e.tenant)
	return n
}

// rawGet runs a test's own query (? placeholders) in a maintenance transaction, which row-level
// security lets see every tenant's rows.
func (e *env) rawGet(dst any, query string, args ...any) {
	e.t.Helper()
	err := e.db.Read(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(e.ctx, dst, tx.Rebind(query), args...)
	})
	if err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

func ptr[T any](v T) *T { return &v }

func ids(ds []decisions.Decision) []uuid.UUID {
	out := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		out[i] = d.DecisionID
	}
	return out
}

func sameIDs(got []decisions.Decision, want ...decisions.Decision) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].DecisionID != want[i].DecisionID {
			return false
		}
	}
	return true
}
