package decisions_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is one case's world: a database with an injected clock, the run-lease core with the
// decision hooks, the decision store and a fresh tenant with project p1.
type env struct {
	*apitest.Env
	store *decisions.Store
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch, Logger: apitest.Quiet(), Hooks: []runs.Hooks{decisions.Hooks()},
		KeyID: "runtime-key", OtherKeyID: "other-key"})
	return &env{Env: e, store: decisions.NewStore(e.DB, e.Svc)}
}

// other is a second tenant on the same database and services.
func (e *env) other() *env {
	e.T.Helper()
	return &env{Env: e.Env.Other(e.T), store: e.store}
}

// claimed enqueues a run on subject and claims it: the attempt runs at fencing token 1.
func (e *env) claimed(subject string) runs.Claimed {
	e.T.Helper()
	spec := runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: "agent-1", StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}
	if _, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, spec); err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	cl, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil {
		e.T.Fatalf("claim: %v", err)
	}
	return cl
}

// ask requests a decision under the claim's lease.
func (e *env) ask(cl runs.Claimed, r decisions.Request) decisions.Decision {
	e.T.Helper()
	d, err := e.store.Request(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, r)
	if err != nil {
		e.T.Fatalf("request decision: %v", err)
	}
	return d
}

func (e *env) get(id uuid.UUID) decisions.Decision {
	e.T.Helper()
	d, err := e.store.Get(e.Ctx, e.Tenant, id)
	if err != nil {
		e.T.Fatalf("get decision %s: %v", id, err)
	}
	return d
}

func (e *env) attempt(id uuid.UUID) attempts.Attempt {
	e.T.Helper()
	var a attempts.Attempt
	err := e.DB.Read(e.Ctx, sqldb.TenantScope(e.Tenant), func(tx *sqldb.Tx) error {
		var err error
		a, err = attempts.Get(e.Ctx, tx, e.Tenant, id)
		return err
	})
	if err != nil {
		e.T.Fatalf("get attempt: %v", err)
	}
	return a
}

// stored reads the Status column as stored, bypassing the read-time expiry.
func (e *env) stored(id uuid.UUID) api.DecisionStatus {
	e.T.Helper()
	var s api.DecisionStatus
	e.rawGet(&s, `SELECT Status FROM DecisionRequests WHERE DecisionId = ?`, id)
	return s
}

// count is how many decisions the tenant has.
func (e *env) count() int {
	e.T.Helper()
	var n int
	e.rawGet(&n, `SELECT COUNT(*) FROM DecisionRequests WHERE TenantId = ?`, e.Tenant)
	return n
}

// rawGet runs a test's own query (? placeholders) in a maintenance transaction, which row-level
// security lets see every tenant's rows.
func (e *env) rawGet(dst any, query string, args ...any) {
	e.T.Helper()
	err := e.DB.Read(e.Ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(e.Ctx, dst, tx.Rebind(query), args...)
	})
	if err != nil {
		e.T.Fatalf("%s: %v", query, err)
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
