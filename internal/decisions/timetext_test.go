package decisions_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestDecisionTimesReadAsText: on SQLite a decision's request, answer, read and listings
// answer its times as text (no time converted by the driver, sqldb.DB.DriverTimes), and
// they come back as written, to the millisecond, in UTC.
func TestDecisionTimesReadAsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite())
	cl := e.claimed("s")
	e.Clock.Advance(1234567 * time.Microsecond)
	asked := sqldb.Truncate(e.Clock.Now())
	before := e.DB.DriverTimes()
	d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Hour})
	e.Clock.Advance(2345678 * time.Microsecond)
	answered := sqldb.Truncate(e.Clock.Now())
	e.mustAnswer(d, api.DecisionApproved, "")
	got := e.get(d.DecisionID)
	list, err := e.store.List(e.Ctx, e.Tenant, decisions.ListFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	byAttempt, err := e.store.ListByAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	byRun, err := e.store.ListByRun(e.Ctx, e.Tenant, cl.Run.RunID, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.DB.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver", n)
	}
	all := append(append(append([]decisions.Decision{got}, list...), byAttempt...), byRun...)
	if len(all) != 4 {
		t.Fatalf("%d decisions read, want 4", len(all))
	}
	for i, d := range all {
		if !d.RequestedAt.Equal(asked) || d.RequestedAt.Location() != time.UTC || d.AnsweredAt == nil || !d.AnsweredAt.Equal(answered) ||
			d.ExpiresAt == nil || !d.ExpiresAt.Equal(asked.Add(time.Hour)) {
			t.Fatalf("read %d: requested %v answered %v expires %v", i, d.RequestedAt, d.AnsweredAt, d.ExpiresAt)
		}
	}
}
