package runs_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestCycleReadsTimesAsText: on SQLite every statement of a cycle (enqueue, claim,
// heartbeat, complete) and the reads of its run (get, list) answer their times as text,
// so no time reaches the driver's slow DATETIME parse (sqldb.DB.DriverTimes stays 0), and
// every time comes back as the instant written, in UTC, to the millisecond.
func TestCycleReadsTimesAsText(t *testing.T) {
	t.Parallel()
	start := epoch.Add(123 * time.Millisecond).Add(456 * time.Microsecond)
	e := newEnvAt(t, dbtest.SQLite(), start)
	deadline := start.Add(time.Hour + 789*time.Millisecond)
	before := e.db.DriverTimes() // the world's set-up (tenant, project) is not the cycle
	r := e.enqueue(spec("times", func(s *runs.Spec) { s.DeadlineAt = &deadline }))
	e.clock.Advance(time.Second)
	cl := e.claim()
	hb, err := e.svc.Heartbeat(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, 60)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		runs.Completion{State: api.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	got := e.get(r.RunID)
	list, err := e.svc.List(e.ctx, e.tenant, runs.ListFilter{Limit: 10})
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %d runs, %v", len(list), err)
	}
	if n := e.db.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver (a statement answers a DATETIME column as such)", n)
	}
	ms := func(t time.Time) time.Time { return sqldb.Truncate(t) }
	for _, run := range []runs.Run{got, list[0]} {
		if !run.QueuedAt.Equal(ms(start)) || !run.DueAt.Equal(ms(start)) || run.QueuedAt.Location() != time.UTC ||
			run.DeadlineAt == nil || !run.DeadlineAt.Equal(ms(deadline)) ||
			run.EndedAt == nil || !run.EndedAt.Equal(ms(start.Add(2*time.Second))) ||
			run.LeasedUntil != nil || run.CancelRequestedAt != nil {
			t.Fatalf("times of the run: queued %v due %v deadline %v ended %v leased until %v cancel %v",
				run.QueuedAt, run.DueAt, run.DeadlineAt, run.EndedAt, run.LeasedUntil, run.CancelRequestedAt)
		}
	}
	if !hb.LeasedUntil.Equal(ms(start.Add(time.Second + 60*time.Second))) {
		t.Fatalf("heartbeat's lease: %v", hb.LeasedUntil)
	}
}
