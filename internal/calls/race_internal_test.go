package calls

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestInsertResolvesALostRace drives the path a concurrent duplicate takes on SQL Server,
// which SQLite's single writer never reaches through Record: the record passed the fence
// without seeing the winner's row, and the unique index refuses its insert. It must answer
// as a repeat (same request hash) or sequence_conflict (another), and leave the
// transaction usable.
func TestInsertResolvesALostRace(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		ctx, db, svc, tenant := e.Ctx, e.DB, e.Svc, e.Tenant
		s := NewStore(db, svc)
		cl := e.Lease()
		n := New{Sequence: 7, Kind: HTTP, Target: "https://example.test/", RequestHash: "h"}
		won, created, err := s.Record(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
		if err != nil || !created {
			t.Fatalf("winner: created=%v err=%v", created, err)
		}
		err = db.Write(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			f, err := svc.Fence(ctx, tx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken)
			if err != nil {
				return err
			}
			got, created, err := s.insert(ctx, tx, f, n)
			if err != nil || created || got.CallID != won.CallID || got.Version != won.Version {
				t.Errorf("lost race, same hash: created=%v err=%v got %+v, want the winner %+v", created, err, got, won)
			}
			other := n
			other.RequestHash = "other"
			if _, _, err := s.insert(ctx, tx, f, other); !apperr.Is(err, apperr.SequenceConflict) {
				t.Errorf("lost race, other hash: got %v, want sequence_conflict", err)
			}
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
		if err != nil || len(cs) != 2 || cs[0].CallID != won.CallID || cs[1].Sequence != 8 {
			t.Fatalf("stored %+v %v, want the winner and sequence 8", cs, err)
		}
	})
}
