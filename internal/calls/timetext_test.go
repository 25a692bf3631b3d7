package calls_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestCallTimesReadAsText: on SQLite a call's record, finish, read and listings answer
// their times as text (no time converted by the driver, sqldb.DB.DriverTimes), and the
// times come back as the instants written, to the millisecond, in UTC.
func TestCallTimesReadAsText(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, dbtest.SQLite(), epoch)
	s := calls.NewStore(e.DB, e.Svc)
	cl := e.Lease()
	e.Clock.Advance(1234567 * time.Microsecond)
	started := sqldb.Truncate(e.Clock.Now())
	before := e.DB.DriverTimes()
	c, _, err := s.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		calls.Draft{Sequence: 1, Kind: api.CallModel, Target: "m", RequestHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(2345678 * time.Microsecond)
	ended := sqldb.Truncate(e.Clock.Now())
	if _, err := s.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
		calls.Finish{Status: api.CallSucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID)
	if err != nil {
		t.Fatal(err)
	}
	byAttempt, err := s.List(e.Ctx, e.Tenant, cl.Attempt.AttemptID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	from, to := started.Add(-time.Hour), ended.Add(time.Hour)
	byStart, err := s.ListTenant(e.Ctx, e.Tenant, calls.TenantFilter{From: &from, To: &to, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	byEnd, err := s.ListTenant(e.Ctx, e.Tenant, calls.TenantFilter{Ended: true, From: &from, To: &to, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.DB.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver", n)
	}
	for i, c := range append([]calls.Call{got}, append(byAttempt, append(byStart, byEnd...)...)...) {
		if !c.StartedAt.Equal(started) || c.StartedAt.Location() != time.UTC || c.EndedAt == nil || !c.EndedAt.Equal(ended) {
			t.Fatalf("read %d: started %v ended %v, want %v and %v", i, c.StartedAt, c.EndedAt, started, ended)
		}
	}
	if len(byAttempt) != 1 || len(byStart) != 1 || len(byEnd) != 1 {
		t.Fatalf("listings: %d, %d, %d calls", len(byAttempt), len(byStart), len(byEnd))
	}
}
