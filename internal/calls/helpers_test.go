package calls_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

// epoch is in this package's own clock range (dbtest.PackageEpoch), so its reapers and
// another package's never take each other's leases on a shared database.
var epoch = dbtest.PackageEpoch(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

// wireTime is t as the API writes it.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// env is one case's world: a database with an injected clock, the run-lease core, the
// call store and a fresh tenant with a project.
type env struct {
	*apitest.Env
	store *calls.Store
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch, Hooks: []runs.Hooks{calls.Hooks()}})
	return &env{Env: e, store: calls.NewStore(e.DB, e.Svc)}
}

// other is a second tenant on the same database.
func (e *env) other(t *testing.T) *env {
	t.Helper()
	return &env{Env: e.Env.Other(t), store: e.store}
}

func call(seq int, hash string) calls.Draft {
	return calls.Draft{Sequence: seq, Kind: api.CallTool, Target: fmt.Sprintf("tool://search/%d", seq), RequestHash: hash}
}

// record writes a call that must be created.
func (e *env) record(cl runs.Claimed, n calls.Draft) calls.Call {
	e.T.Helper()
	c, created, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil || !created {
		e.T.Fatalf("record sequence %d: created=%v err=%v", n.Sequence, created, err)
	}
	return c
}

func (e *env) get(cl runs.Claimed, id uuid.UUID) calls.Call {
	e.T.Helper()
	c, err := e.store.Get(e.Ctx, e.Tenant, cl.Attempt.AttemptID, id)
	if err != nil {
		e.T.Fatalf("get call: %v", err)
	}
	return c
}

// all lists every call of the attempt.
func (e *env) all(id uuid.UUID) []calls.Call {
	e.T.Helper()
	cs, err := e.store.List(e.Ctx, e.Tenant, id, calls.Start, 500)
	if err != nil {
		e.T.Fatalf("list: %v", err)
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
