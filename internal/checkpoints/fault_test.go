package checkpoints_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestAppendLosesASequenceRace makes the path a concurrent append of the same sequence
// takes on SQL Server run on SQLite (whose one writer never collides): the statement hook
// writes the winner's checkpoint just before this append's insert, which the unique index
// then refuses. The append must answer as a repeat (same hash: the winner's row, 200) or
// sequence_conflict (another hash), never a 500, and keep only the winner.
func TestAppendLosesASequenceRace(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		s := checkpoints.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		winner := ids.New()
		inject := func(hash string) *atomic.Bool {
			var ran atomic.Bool
			e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if st.Query != checkpoints.InsertQuery(s) || ran.Swap(true) {
					return nil
				}
				_, err := tx.ExecContext(ctx, checkpoints.InsertQuery(s), winner, cl.Attempt.AttemptID, e.Tenant, int32(7), int32(api.PhasePlanning),
					"ref", "1", nil, hash, tx.Dialect.Time(e.Clock.Now()))
				return err
			})
			return &ran
		}
		n := checkpoints.Draft{Sequence: 7, Phase: api.PhasePlanning, AdapterStateRef: "ref", AdapterVersion: "1", Hash: "h"}
		ran := inject("h")
		got, created, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
		if !ran.Load() || err != nil || created || got.CheckpointID != winner {
			t.Fatalf("lost race, same hash: ran=%v created=%v err=%v got %s, want the winner %s", ran.Load(), created, err, got.CheckpointID, winner)
		}
		e.DB.SetStatementHook(nil)
		n.Sequence = 9
		var ran9 atomic.Bool
		e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if st.Query != checkpoints.InsertQuery(s) || ran9.Swap(true) {
				return nil
			}
			_, err := tx.ExecContext(ctx, checkpoints.InsertQuery(s), ids.New(), cl.Attempt.AttemptID, e.Tenant, int32(9), int32(api.PhasePlanning),
				"ref", "1", nil, "other", tx.Dialect.Time(e.Clock.Now()))
			return err
		})
		if _, _, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); !ran9.Load() || !apperr.Is(err, api.CodeSequenceConflict) {
			t.Fatalf("lost race, other hash: ran=%v got %v, want sequence_conflict", ran9.Load(), err)
		}
		e.DB.SetStatementHook(nil)
		cs, err := s.List(e.Ctx, e.Tenant, cl.Attempt.AttemptID, checkpoints.Start, 10)
		// The refused append rolled back its transaction, and with it the injected rival of
		// sequence 9 (on SQL Server that rival commits on its own): the winner of 7 is all.
		if err != nil || len(cs) != 1 || cs[0].CheckpointID != winner {
			t.Fatalf("stored %+v %v, want the winner of sequence 7 only", cs, err)
		}
	})
}
