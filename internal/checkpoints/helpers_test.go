package checkpoints_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is one case's world: a database with an injected clock, the run-lease core, the
// checkpoint store and a fresh tenant with a project.
type env struct {
	*apitest.Env
	store *checkpoints.Store
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	e := apitest.NewEnv(t, tgt, epoch)
	return &env{Env: e, store: checkpoints.NewStore(e.DB, e.Svc)}
}

// other is a second tenant on the same database.
func (e *env) other(t *testing.T) *env {
	t.Helper()
	return &env{Env: e.Env.Other(t), store: e.store}
}

func cp(seq int, hash string) checkpoints.Draft {
	ref := fmt.Sprintf("ctx://snap/%d", seq)
	return checkpoints.Draft{
		Sequence: seq, Phase: api.PhaseActing, AdapterStateRef: fmt.Sprintf("blob://state/%d", seq),
		AdapterVersion: "1.0", ContextSnapshotRef: &ref, Hash: hash,
	}
}

// append writes a checkpoint that must be created.
func (e *env) append(cl runs.Claimed, n checkpoints.Draft) checkpoints.Checkpoint {
	e.T.Helper()
	c, created, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil || !created {
		e.T.Fatalf("append sequence %d: created=%v err=%v", n.Sequence, created, err)
	}
	return c
}

// attempt reads an attempt of the tenant.
func (e *env) attempt(id uuid.UUID) attempts.Attempt {
	e.T.Helper()
	var a attempts.Attempt
	err := e.DB.Read(e.Ctx, sqldb.TenantScope(e.Tenant), func(tx *sqldb.Tx) error {
		var err error
		a, err = attempts.Get(e.Ctx, tx, e.Tenant, id)
		return err
	})
	if err != nil {
		e.T.Fatalf("read attempt: %v", err)
	}
	return a
}

// all lists every checkpoint of the attempt.
func (e *env) all(id uuid.UUID) []checkpoints.Checkpoint {
	e.T.Helper()
	cs, err := e.store.List(e.Ctx, e.Tenant, id, checkpoints.Start, 500)
	if err != nil {
		e.T.Fatalf("list: %v", err)
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
