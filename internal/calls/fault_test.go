package calls_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestRecordLosesASequenceRace makes the path a concurrent record of the same sequence
// takes on SQL Server run on SQLite: the statement hook writes the winner's call just
// before this record's insert, which the unique index then refuses. The record answers as
// a repeat (same request hash: the winner's row) or sequence_conflict, never a 500.
func TestRecordLosesASequenceRace(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, epoch)
		s := calls.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		inject := func(id uuid.UUID, seq int32, hash string) *atomic.Bool {
			var ran atomic.Bool
			e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if st.Query != calls.InsertQuery(s) || ran.Swap(true) {
					return nil
				}
				var c calls.Call
				return tx.GetContext(ctx, &c, calls.InsertQuery(s), calls.InsertArgs(tx.Dialect, id, cl.Attempt.AttemptID, e.Tenant,
					e.Clock.Now(), calls.Draft{Sequence: int(seq), Kind: api.CallHTTP, Target: "https://example.test/", RequestHash: hash})...)
			})
			t.Cleanup(func() { e.DB.SetStatementHook(nil) })
			return &ran
		}
		winner := ids.New()
		ran := inject(winner, 7, "h")
		n := calls.Draft{Sequence: 7, Kind: api.CallHTTP, Target: "https://example.test/", RequestHash: "h"}
		got, created, err := s.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
		if !ran.Load() || err != nil || created || got.CallID != winner || got.Version == 0 {
			t.Fatalf("lost race, same hash: ran=%v created=%v err=%v got %+v, want the winner %s", ran.Load(), created, err, got, winner)
		}
		ran = inject(ids.New(), 8, "other")
		n.Sequence = 8
		if _, _, err := s.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); !ran.Load() || !apperr.Is(err, api.CodeSequenceConflict) {
			t.Fatalf("lost race, other hash: ran=%v got %v, want sequence_conflict", ran.Load(), err)
		}
		e.DB.SetStatementHook(nil)
		cs, err := s.List(e.Ctx, e.Tenant, cl.Attempt.AttemptID, calls.Start, 10)
		if err != nil || len(cs) != 1 || cs[0].CallID != winner {
			t.Fatalf("stored %+v %v, want the winner of sequence 7 only (the refused record rolled back its rival too)", cs, err)
		}
	})
}

// TestFinishLosesARace: a concurrent finish of the same call commits first (injected just
// before this finish's update): the same finish answers as a repeat, another one is
// illegal_transition.
func TestFinishLosesARace(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, epoch)
		s := calls.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		c, _, err := s.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, calls.Draft{Sequence: 1, Kind: api.CallTool, Target: "t", RequestHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		receipt := "receipt://1"
		var first calls.Call
		var ran atomic.Bool
		e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if st.Query != calls.FinishQuery(s) || ran.Swap(true) {
				return nil
			}
			return tx.GetContext(ctx, &first, calls.FinishQuery(s), calls.FinishArgs(tx.Dialect, e.Tenant, cl.Attempt.AttemptID, c.CallID,
				calls.Finish{Status: api.CallSucceeded, ReceiptRef: &receipt}, e.Clock.Now())...)
		})
		defer e.DB.SetStatementHook(nil)
		got, err := s.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, calls.Finish{Status: api.CallSucceeded, ReceiptRef: &receipt})
		if !ran.Load() || err != nil || got.Version != first.Version || got.Status != api.CallSucceeded {
			t.Fatalf("repeat after a concurrent finish: ran=%v %+v %v", ran.Load(), got, err)
		}
		if _, err := s.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, calls.Finish{Status: api.CallFailed}); !apperr.Is(err, api.CodeIllegalTransition) {
			t.Fatalf("another finish: got %v, want illegal_transition", err)
		}
	})
}
