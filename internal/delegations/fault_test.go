package delegations_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestCreateLosesTheChildKeyToAConcurrentCreate makes the path two concurrent creates of
// one delegation take on SQL Server run on SQLite: the statement hook commits (in effect)
// the winner's child run and delegation just before this create's child insert, which
// UX_Runs_Idempotency then refuses. The create answers the winner's delegation, 200, and
// no second child or delegation exists.
func TestCreateLosesTheChildKeyToAConcurrentCreate(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
			Hooks: []runs.Hooks{delegations.Hooks()}})
		s := delegations.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		key := "child-once"
		req := delegations.Request{Purpose: "p", Child: runs.Spec{ProjectID: "p1", Subject: "child", Kind: "k", AgentID: "sub",
			StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3, IdempotencyKey: &key}}
		var winner delegations.Delegation
		var ran atomic.Bool
		e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if !strings.Contains(st.Query, "INSERT INTO Runs") && !strings.Contains(st.Query, "INSERT INTO dbo.Runs") || ran.Swap(true) {
				return nil
			}
			spec := req.Child
			parent := cl.Run.RunID
			spec.ParentRunID = &parent
			child, _, err := e.Svc.EnqueueTx(ctx, tx, e.Caller, spec)
			if err != nil {
				return err
			}
			return tx.GetContext(ctx, &winner, delegations.InsertQuery(s), ids.New(), cl.Attempt.AttemptID, e.Tenant, child.RunID, "sub", "p",
				child.Depth, delegations.StatusOf(child), tx.Dialect.Time(e.Clock.Now()))
		})
		defer e.DB.SetStatementHook(nil)
		got, created, err := s.Create(e.Ctx, e.Caller, cl.Attempt.AttemptID, cl.Lease.FencingToken, req)
		if !ran.Load() || err != nil || created || got.DelegationID != winner.DelegationID {
			t.Fatalf("lost the child key: ran=%v created=%v err=%v got %+v, want the winner %+v", ran.Load(), created, err, got, winner)
		}
		ds, err := s.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 10)
		if err != nil || len(ds) != 1 {
			t.Fatalf("%d delegations (%v), want the winner's only", len(ds), err)
		}
		if n, err := e.Svc.TenantDisagreements(e.Ctx, e.Tenant); err != nil || n != 0 {
			t.Fatalf("%d disagreements (%v)", n, err)
		}
	})
}
