package feed_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)

// seenProjector copies each project row's (ProjectId, Version) it is given into FeedSeen,
// at most batch rows per call, so a test can check that every committed change was applied
// exactly once and in the transaction that moved the position.
type seenProjector struct {
	batch int
	fail  error // returned after applying, so the step rolls back
}

func (seenProjector) Name() string { return "test-seen" }

type projectRow struct {
	ProjectID string           `db:"ProjectId"`
	Version   sqldb.RowVersion `db:"Version"`
}

func (p seenProjector) Project(ctx context.Context, tx *sqldb.Tx, after, ceiling sqldb.RowVersion) (sqldb.RowVersion, error) {
	var rows []projectRow
	if err := tx.SelectContext(ctx, &rows, `SELECT ProjectId, Version FROM Projects
WHERE Version > ?1 AND Version < ?2 ORDER BY Version LIMIT ?3`, after, ceiling, p.batch); err != nil {
		return 0, err
	}
	through := ceiling - 1
	if len(rows) == p.batch {
		through = rows[len(rows)-1].Version // one project row per statement: versions are distinct
	}
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO FeedSeen (ProjectId, Version) VALUES (?1, ?2)`, r.ProjectID, r.Version); err != nil {
			return 0, err
		}
	}
	if p.fail != nil {
		return 0, p.fail
	}
	return through, nil
}

func open(t *testing.T) (*sqldb.DB, *dbtest.Clock, string) {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	if _, err := db.Raw().Exec(`CREATE TABLE FeedSeen (ProjectId TEXT NOT NULL, Version INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db, clock, dbtest.NewTenant(t, db)
}

func addProjects(t *testing.T, db *sqldb.DB, tenant string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := db.Raw().Exec(`INSERT INTO Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, 1, 7, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', (SELECT Value + 1 FROM RowVersionCounter))`,
			tenant, fmt.Sprintf("p%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func seen(t *testing.T, db *sqldb.DB) map[string]int {
	t.Helper()
	var ids []string
	if err := db.Raw().Select(&ids, `SELECT ProjectId FROM FeedSeen`); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, id := range ids {
		out[id]++
	}
	return out
}

func runner(db *sqldb.DB, holder string, p feed.Projector) *feed.Runner {
	return feed.NewRunner(db, p, feed.Options{Holder: holder, Lease: 10 * time.Second})
}

// TestCatchUpInBatches: the runner applies every committed change once, one bounded batch
// per transaction, and its status says how far behind it is before and after.
func TestCatchUpInBatches(t *testing.T) {
	t.Parallel()
	db, _, tenant := open(t)
	ctx := context.Background()
	addProjects(t, db, tenant, 0, 25)
	r := runner(db, "a", seenProjector{batch: 10})
	st, err := r.Step(ctx)
	if err != nil || !st.Held || st.CaughtUp {
		t.Fatalf("first step = %+v, %v; want held, not caught up", st, err)
	}
	if got := len(seen(t, db)); got != 10 {
		t.Fatalf("after one step %d rows applied, want one batch of 10", got)
	}
	s, ok, err := feed.StatusOf(ctx, db, "test-seen")
	if err != nil || !ok || s.Behind() == 0 {
		t.Fatalf("status after one batch = %+v, %v, %v; want versions behind", s, ok, err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	got := seen(t, db)
	if len(got) != 25 {
		t.Fatalf("applied %d projects, want 25", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
	addProjects(t, db, tenant, 25, 3)
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(seen(t, db)); got != 28 {
		t.Fatalf("applied %d projects after 3 more, want 28", got)
	}
	s, _, err = feed.StatusOf(ctx, db, "test-seen")
	if err != nil || s.Behind() != 0 || s.Lag() != 0 || !s.CaughtUpAt.Equal(epoch) {
		t.Fatalf("status when caught up = %+v, %v; want 0 behind, caught up at the clock's time", s, err)
	}
}

// TestOneReplicaAtATime: while one replica's lease lasts another's steps apply nothing;
// once it expires (the holder died) the other takes over from the stored position.
func TestOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	db, clock, tenant := open(t)
	ctx := context.Background()
	addProjects(t, db, tenant, 0, 15)
	a, b := runner(db, "a", seenProjector{batch: 10}), runner(db, "b", seenProjector{batch: 10})
	if st, err := a.Step(ctx); err != nil || !st.Held {
		t.Fatalf("a's step = %+v, %v", st, err)
	}
	if st, err := b.Step(ctx); err != nil || st.Held {
		t.Fatalf("b's step while a holds the lease = %+v, %v; want not held", st, err)
	}
	if got := len(seen(t, db)); got != 10 {
		t.Fatalf("applied %d, want a's batch of 10 only", got)
	}
	clock.Advance(11 * time.Second) // a stopped renewing
	if err := b.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	got := seen(t, db)
	if len(got) != 15 {
		t.Fatalf("applied %d projects, want 15", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("%s applied %d times across the hand-over", id, n)
		}
	}
	if st, err := a.Step(ctx); err != nil || st.Held {
		t.Fatalf("a's step while b holds the lease = %+v, %v; want not held", st, err)
	}
}

// TestFailedStepKeepsNothing: a step that fails after applying rolls back with its
// position (as a crash mid-step does), and the next step applies the same range once.
func TestFailedStepKeepsNothing(t *testing.T) {
	t.Parallel()
	db, _, tenant := open(t)
	ctx := context.Background()
	addProjects(t, db, tenant, 0, 5)
	boom := errors.New("boom")
	if _, err := runner(db, "a", seenProjector{batch: 10, fail: boom}).Step(ctx); !errors.Is(err, boom) {
		t.Fatalf("step = %v, want boom", err)
	}
	if got := len(seen(t, db)); got != 0 {
		t.Fatalf("a failed step kept %d rows", got)
	}
	if err := runner(db, "a", seenProjector{batch: 10}).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := seen(t, db); len(got) != 5 {
		t.Fatalf("after the retry applied %v, want the 5 projects once each", got)
	}
}

// TestLagMetrics: /metrics shows how far behind each projector is.
func TestLagMetrics(t *testing.T) {
	t.Parallel()
	db, clock, tenant := open(t)
	ctx := context.Background()
	r := runner(db, "a", seenProjector{batch: 2})
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	addProjects(t, db, tenant, 0, 5)
	clock.Advance(7 * time.Second)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(feed.NewCollector(db, nil))
	if got, want := gauges(t, reg), map[string]float64{"ledger_feed_lag_seconds": 7, "ledger_feed_lag_versions": 5}; !maps.Equal(got, want) {
		t.Fatalf("behind: gauges = %v, want %v", got, want)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := gauges(t, reg), map[string]float64{"ledger_feed_lag_seconds": 0, "ledger_feed_lag_versions": 0}; !maps.Equal(got, want) {
		t.Fatalf("caught up: gauges = %v, want %v", got, want)
	}
}

// gauges gathers reg's gauges of projector test-seen by family name.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "test-seen" {
				out[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
