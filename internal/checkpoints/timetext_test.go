package checkpoints_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestCheckpointTimesReadAsText: on SQLite a checkpoint's append (and its repeat), read,
// listing and the run's last checkpoint answer CreatedAt as text (no time converted by the
// driver, sqldb.DB.DriverTimes), and it comes back as written, to the millisecond, in UTC.
func TestCheckpointTimesReadAsText(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, dbtest.SQLite(), epoch)
	s := checkpoints.NewStore(e.DB, e.Svc)
	cl := e.Lease()
	e.Clock.Advance(1234567 * time.Microsecond)
	created := sqldb.Truncate(e.Clock.Now())
	before := e.DB.DriverTimes()
	n := checkpoints.Draft{Sequence: 1, Phase: api.PhaseActing, AdapterStateRef: "ref", AdapterVersion: "1", Hash: "h"}
	c, _, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil {
		t.Fatal(err)
	}
	repeat, fresh, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n)
	if err != nil || fresh {
		t.Fatalf("repeat: %v, created %v", err, fresh)
	}
	got, err := s.Get(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(e.Ctx, e.Tenant, cl.Attempt.AttemptID, -1, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %d, %v", len(list), err)
	}
	last, err := s.Last(e.Ctx, e.Tenant, cl.Run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.DB.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver", n)
	}
	for i, c := range []checkpoints.Checkpoint{c, repeat, got, list[0], last.Checkpoint} {
		if !c.CreatedAt.Equal(created) || c.CreatedAt.Location() != time.UTC {
			t.Fatalf("read %d: created %v, want %v", i, c.CreatedAt, created)
		}
	}
}
