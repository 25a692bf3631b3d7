package checkpoints

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestInsertResolvesALostRace drives the path a concurrent duplicate takes on SQL Server,
// which SQLite's single writer never reaches through Append: the append passed the fence
// without seeing the winner's row, and the unique index refuses its insert. It must answer
// as a repeat (same hash) or sequence_conflict (another hash), and leave the transaction
// usable (a unique violation ends the statement, not the transaction).
func TestInsertResolvesALostRace(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		ctx, db, svc, tenant := e.Ctx, e.DB, e.Svc, e.Tenant
		s := NewStore(db, svc)
		cl := e.Lease()
		n := New{Sequence: 7, Phase: attempts.Planning, AdapterStateRef: "ref", AdapterVersion: "1", Hash: "h"}
		won, created, err := s.Append(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
		if err != nil || !created {
			t.Fatalf("winner: created=%v err=%v", created, err)
		}
		err = db.Write(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			f, err := svc.Fence(ctx, tx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken)
			if err != nil {
				return err
			}
			got, created, err := s.insert(ctx, tx, f, n)
			if err != nil || created || got.CheckpointID != won.CheckpointID {
				t.Errorf("lost race, same hash: created=%v err=%v got %s, want the winner %s", created, err, got.CheckpointID, won.CheckpointID)
			}
			other := n
			other.Hash = "other"
			if _, _, err := s.insert(ctx, tx, f, other); !apperr.Is(err, apperr.SequenceConflict) {
				t.Errorf("lost race, other hash: got %v, want sequence_conflict", err)
			}
			// The transaction still works after both refused inserts.
			n8 := n
			n8.Sequence = 8
			if _, created, err := s.insert(ctx, tx, f, n8); err != nil || !created {
				t.Errorf("insert after the refused ones: created=%v err=%v", created, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.List(ctx, tenant, cl.Attempt.AttemptID, Start, 10)
		if err != nil || len(cs) != 2 || cs[0].CheckpointID != won.CheckpointID || cs[1].Sequence != 8 {
			t.Fatalf("stored %+v %v, want the winner and sequence 8", cs, err)
		}
	})
}
