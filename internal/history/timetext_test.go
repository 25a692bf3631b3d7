package history_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestHistoryReadsTimesAsText: on SQLite the attempt listings (by start, by run, by end,
// the change feed), an attempt's read and its timeline with the rows it names answer their
// times as text (no time converted by the driver, sqldb.DB.DriverTimes), and the times come
// back as written, to the millisecond, in UTC.
func TestHistoryReadsTimesAsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite())
	e.clock.Advance(1234567 * time.Microsecond)
	started := sqldb.Truncate(e.clock.Now())
	a := e.attempt()
	e.clock.Advance(time.Second)
	ended := sqldb.Truncate(e.clock.Now())
	if _, err := e.svc.Complete(e.ctx, e.tenant, a.Attempt.AttemptID, a.Lease.FencingToken,
		runs.Completion{State: api.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	marks := []time.Time{started.Add(100 * time.Millisecond), started.Add(200 * time.Millisecond), started.Add(300 * time.Millisecond)}
	e.checkpoint(a, 1, marks[0])
	e.call(a, 1, marks[1])
	e.delegation(a, marks[2])
	before := e.db.DriverTimes()
	var items []history.AttemptItem
	for _, f := range []history.Filter{{Limit: 10}, {RunID: &a.Run.RunID, Limit: 10}} {
		got, err := e.store.List(e.ctx, e.tenant, f)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, got...)
	}
	byEnd, err := e.store.ListEnded(e.ctx, e.tenant, history.EndedFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := e.store.Changes(e.ctx, e.tenant, history.ChangesCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	one, err := e.store.Get(e.ctx, e.tenant, a.Attempt.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	timeline, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.db.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver", n)
	}
	items = append(append(items, byEnd...), changes...)
	if len(items) != 4 {
		t.Fatalf("%d items, want 4", len(items))
	}
	for i, it := range append(items, history.AttemptItem{Attempt: one}) {
		if !it.StartedAt.Equal(started) || it.StartedAt.Location() != time.UTC || it.EndedAt == nil || !it.EndedAt.Equal(ended) {
			t.Fatalf("attempt %d: started %v ended %v, want %v and %v", i, it.StartedAt, it.EndedAt, started, ended)
		}
	}
	// The attempt's end closes its timeline.
	marks = append(marks, ended)
	if len(timeline) != len(marks) {
		t.Fatalf("timeline: %d entries, want %d", len(timeline), len(marks))
	}
	for i, en := range timeline {
		if !en.At.Equal(marks[i]) || en.At.Location() != time.UTC {
			t.Fatalf("timeline %d (%v): %v, want %v", i, en.Kind, en.At, marks[i])
		}
	}
}
