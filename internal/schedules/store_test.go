package schedules_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/schedules"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// world is one case's database, clock, tenant, schedule store and scheduler.
type world struct {
	t      *testing.T
	ctx    context.Context
	db     *sqldb.DB
	clock  *dbtest.Clock
	tenant string
	runs   *runs.Service
	store  *schedules.Store
	sched  *schedules.Scheduler
}

func newWorld(t *testing.T, tgt dbtest.Target, at string) *world {
	t.Helper()
	start, err := time.Parse(time.RFC3339, at)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: context.Background(), clock: dbtest.NewClock(start)}
	w.db = tgt.Open(t, dbtest.Options{Clock: w.clock.Now})
	w.tenant = dbtest.NewTenant(t, w.db)
	if _, _, err := projects.NewStore(w.db).Put(w.ctx, w.tenant, "p1", projects.Change{}); err != nil {
		t.Fatal(err)
	}
	w.runs = runs.NewService(w.db, runs.DefaultConfig(), nil)
	w.store = schedules.NewStore(w.db, w.runs)
	w.sched = schedules.NewScheduler(w.db, w.runs, 0, nil)
	return w
}

func spec() api.RunSpec {
	return api.RunSpec{Subject: "nightly:" + uuid.NewString()[:8], Kind: "eval", ProjectID: "p1", AgentID: "a1",
		StepID: uuid.New(), SnapshotID: uuid.New()}
}

func (w *world) put(id, cron, tz string, overlap api.ScheduleOverlap, catchup int) schedules.Schedule {
	w.t.Helper()
	sc, created, err := w.store.Put(w.ctx, w.tenant, id, schedules.Change{Cron: cron, Timezone: tz, Run: spec(),
		Overlap: overlap, CatchupSeconds: catchup, KeyID: "k1"})
	if err != nil || !created {
		w.t.Fatalf("put %s: created=%v %v", id, created, err)
	}
	return sc
}

func (w *world) tick() schedules.TickResult {
	w.t.Helper()
	r, err := w.sched.Tick(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) get(id string) schedules.Schedule {
	w.t.Helper()
	sc, err := w.store.Get(w.ctx, w.tenant, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return sc
}

// live counts the tenant's runs that are not ended.
func (w *world) live() int {
	w.t.Helper()
	rs, err := w.runs.List(w.ctx, w.tenant, runs.ListFilter{Limit: 500})
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if runs.Live(r) {
			n++
		}
	}
	return n
}

func (w *world) runCount() int {
	w.t.Helper()
	rs, err := w.runs.List(w.ctx, w.tenant, runs.ListFilter{Limit: 500})
	if err != nil {
		w.t.Fatal(err)
	}
	return len(rs)
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestOverlapSkipNeverMakesASecondLiveRun: with overlap skip, a firing while the previous
// run is queued fires nothing and is counted; once that run ends, the next firing fires.
func TestOverlapSkipNeverMakesASecondLiveRun(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt, "2026-01-01T12:00:30Z")
		w.put("s", "* * * * *", "UTC", api.OverlapSkip, 60)
		for i := range 5 {
			w.clock.Advance(time.Minute)
			w.tick()
			if n := w.live(); n != 1 {
				t.Fatalf("minute %d: %d live runs, want 1", i, n)
			}
		}
		sc := w.get("s")
		if sc.Fired != 1 || sc.SkippedOverlap != 4 || len(sc.Firings) != 1 {
			t.Fatalf("fired %d, skipped %d, firings %v", sc.Fired, sc.SkippedOverlap, sc.Firings)
		}
		if _, err := w.runs.Cancel(w.ctx, w.tenant, sc.Firings[0].RunID); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		w.tick()
		if sc := w.get("s"); sc.Fired != 2 || w.live() != 1 || w.runCount() != 2 {
			t.Fatalf("after the run ended: fired %d, live %d, runs %d", sc.Fired, w.live(), w.runCount())
		}
	})
}

// TestOutageFiresNothingOlderThanCatchup: after 5 minutes without a scheduler, the firings
// older than catchupSeconds are counted as skipped and only the newest due one fires.
func TestOutageFiresNothingOlderThanCatchup(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt, "2026-01-01T12:00:30Z")
		w.put("s", "* * * * *", "UTC", api.OverlapAllow, 60)
		w.clock.Advance(40 * time.Second) // 12:01:10
		if r := w.tick(); r.Fired != 1 {
			t.Fatalf("first tick: %+v", r)
		}
		w.clock.Advance(5 * time.Minute) // 12:06:10: 12:02..12:05 are older than 60 s
		if r := w.tick(); r.Fired != 1 || r.SkippedCatchup != 4 {
			t.Fatalf("after the outage: %+v", r)
		}
		sc := w.get("s")
		if sc.SkippedCatchup != 4 || sc.Fired != 2 || len(sc.Firings) != 2 {
			t.Fatalf("schedule: %+v", sc)
		}
		if got := sc.Firings[0].FireAt; !got.Equal(at("2026-01-01T12:06:00Z")) {
			t.Fatalf("newest firing at %s, want 12:06", got)
		}
		if got := sc.Firings[1].FireAt; !got.Equal(at("2026-01-01T12:01:00Z")) {
			t.Fatalf("first firing at %s, want 12:01", got)
		}
		if !sc.NextFireAt.Equal(at("2026-01-01T12:07:00Z")) {
			t.Fatalf("next fire at %v", sc.NextFireAt)
		}
	})
}

// TestPausedFiresNothingAndResumeDoesNotBackfill.
func TestPausedFiresNothingAndResumeDoesNotBackfill(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt, "2026-01-01T12:00:30Z")
		sc := w.put("s", "* * * * *", "UTC", api.OverlapAllow, 600)
		change := func(paused bool) {
			v := sc.Version
			var err error
			sc, _, err = w.store.Put(w.ctx, w.tenant, "s", schedules.Change{Cron: sc.Cron, Timezone: sc.Timezone, Run: sc.Wire().Run,
				Overlap: api.OverlapAllow, CatchupSeconds: 600, Paused: paused, KeyID: "k1", IfMatch: &v})
			if err != nil {
				t.Fatal(err)
			}
		}
		change(true)
		if sc.NextFireAt != nil {
			t.Fatalf("paused with next fire at %v", sc.NextFireAt)
		}
		w.clock.Advance(5 * time.Minute)
		w.tick()
		change(false)
		if r := w.tick(); r.Fired != 0 || w.runCount() != 0 {
			t.Fatalf("resume back-filled: %+v, %d runs", r, w.runCount())
		}
		if !sc.NextFireAt.Equal(at("2026-01-01T12:06:00Z")) {
			t.Fatalf("resumed next fire at %v, want the first after now", sc.NextFireAt)
		}
		w.clock.Advance(time.Minute)
		if r := w.tick(); r.Fired != 1 {
			t.Fatalf("after resume: %+v", r)
		}
	})
}

// TestBerlinTransitionsFireAsDocumented: the scheduler fires 02:30 Europe/Berlin on the
// spring day at 03:00 CEST (the first instant after the gap), and on the autumn day once, at
// the first 02:30 (CEST), not again an hour later.
func TestBerlinTransitionsFireAsDocumented(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range []struct {
			name, start string
			steps       []string // clock positions in order
			want        []string // fire times that made runs, oldest first
		}{
			{"Spring", "2026-03-28T12:00:00Z",
				[]string{"2026-03-28T23:59:00Z", "2026-03-29T00:30:01Z", "2026-03-29T01:00:01Z", "2026-03-29T02:00:01Z"},
				[]string{"2026-03-29T01:00:00Z"}},
			{"Autumn", "2026-10-24T12:00:00Z",
				[]string{"2026-10-25T00:30:01Z", "2026-10-25T01:30:01Z", "2026-10-25T02:30:01Z"},
				[]string{"2026-10-25T00:30:00Z"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, tgt, c.start)
				w.put("nightly", "30 2 * * *", "Europe/Berlin", api.OverlapAllow, 60)
				for _, s := range c.steps {
					w.clock.Advance(at(s).Sub(w.clock.Now()))
					w.tick()
				}
				sc := w.get("nightly")
				if len(sc.Firings) != len(c.want) {
					t.Fatalf("firings %v, want %v", sc.Firings, c.want)
				}
				for i, f := range sc.Firings {
					if want := at(c.want[len(c.want)-1-i]); !f.FireAt.Equal(want) {
						t.Fatalf("firing %d at %s, want %s", i, f.FireAt, want)
					}
				}
				if sc.SkippedCatchup != 0 || sc.Fired != int64(len(c.want)) {
					t.Fatalf("fired %d, skipped %d", sc.Fired, sc.SkippedCatchup)
				}
			})
		}
	})
}

// TestLostFiringChangesNothing makes the path a losing replica takes on SQL Server run on
// SQLite (one writer: a second scheduler there never reads a stale NextFireAt): another
// scheduler's firing lands just before this one's conditional write, which then matches no
// row, and this firing enqueues nothing and counts nothing.
func TestLostFiringChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLite(), "2026-01-01T12:00:30Z")
	w.put("s", "* * * * *", "UTC", api.OverlapAllow, 60)
	w.clock.Advance(time.Minute)
	var fired atomic.Bool
	w.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if !strings.HasPrefix(st.Query, "UPDATE ScheduleStates SET NextFireAt = ?4") || fired.Swap(true) {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE ScheduleStates SET NextFireAt = '2026-01-01T12:02:00.000Z', Fired = Fired + 1
WHERE TenantId = ?1 AND ScheduleId = ?2`, w.tenant, "s")
		return err
	})
	r := w.tick()
	w.db.SetStatementHook(nil)
	if !fired.Load() {
		t.Fatal("the hook never met the conditional write")
	}
	if r.Fired != 0 || r.Lost != 1 || w.runCount() != 0 {
		t.Fatalf("the loser fired: %+v, %d runs", r, w.runCount())
	}
	if sc := w.get("s"); sc.Fired != 1 || !sc.NextFireAt.Equal(at("2026-01-01T12:02:00Z")) {
		t.Fatalf("the winner's write was changed: %+v", sc)
	}
}

// TestRefusedFiringIsSpent: a firing whose run the enqueue refuses (its key already names a
// run made by another request) enqueues nothing, is counted as skipped, and the schedule
// moves on instead of retrying it at every pass.
func TestRefusedFiringIsSpent(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt, "2026-01-01T12:00:30Z")
		w.put("s", "* * * * *", "UTC", api.OverlapAllow, 60)
		key := schedules.FiringKey("s", at("2026-01-01T12:01:00Z"))
		if _, _, err := w.runs.Enqueue(w.ctx, runs.Caller{TenantID: w.tenant, KeyID: "k"}, runs.Spec{ProjectID: "p1", Subject: "squat",
			Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), MaxAttempts: 3, MaxCorrections: 3, IdempotencyKey: &key}); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		w.tick()
		sc := w.get("s")
		if sc.Fired != 0 || sc.SkippedCatchup != 1 || !sc.NextFireAt.Equal(at("2026-01-01T12:02:00Z")) || w.runCount() != 1 {
			t.Fatalf("after a refused firing: %+v, %d runs", sc, w.runCount())
		}
		w.clock.Advance(time.Minute)
		if r := w.tick(); r.Fired != 1 {
			t.Fatalf("the next firing: %+v", r)
		}
	})
}

// TestMetricsCountFiringsAndSkips: the scheduler's counters follow what it did.
func TestMetricsCountFiringsAndSkips(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLite(), "2026-01-01T12:00:30Z")
	w.put("s", "* * * * *", "UTC", api.OverlapSkip, 60)
	w.clock.Advance(time.Minute) // 12:01:30: fires 12:01, 30 s late
	w.tick()
	w.clock.Advance(time.Minute) // 12:02:30: the 12:01 run is live
	w.tick()
	w.clock.Advance(3 * time.Minute) // 12:05:30: 12:03 and 12:04 are too old, 12:05 overlaps
	w.tick()
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.sched.Collectors()...)
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				got[name] = m.Counter.GetValue()
			case m.Histogram != nil:
				got[name+"/count"] = float64(m.Histogram.GetSampleCount())
				got[name+"/sum"] = m.Histogram.GetSampleSum()
			}
		}
	}
	want := map[string]float64{
		"ledger_schedule_firings_total": 1, "ledger_schedule_skips_total/overlap": 2, "ledger_schedule_skips_total/catchup": 2,
		"ledger_schedule_lateness_seconds/count": 1, "ledger_schedule_lateness_seconds/sum": 30,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// TestPutRaces makes the paths a concurrent PUT takes on SQL Server run on SQLite: a create
// that finds the schedule created meanwhile is an update without If-Match (428), and an
// update whose version moved meanwhile is 412, with nothing of it kept (its reschedule of
// the state row rolls back with it).
func TestPutRaces(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, before, winner string
		create               bool
		want                 api.ProblemCode
	}{
		{"ConcurrentCreate", "INSERT INTO Schedules", `INSERT INTO Schedules (TenantId, ScheduleId, Cron, Timezone, RunSpec, Overlap,
    CatchupSeconds, Paused, CreatedAt, UpdatedAt, UpdatedBy, Version)
VALUES (?1, ?2, '@daily', 'UTC', '{}', 'skip', 60, 0, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'k',
    (SELECT Value + 1 FROM RowVersionCounter))`, true, api.CodePreconditionRequired},
		{"ConcurrentUpdate", "UPDATE Schedules", `UPDATE Schedules SET Cron = '@weekly', Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ScheduleId = ?2`, false, api.CodePreconditionFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, dbtest.SQLite(), "2026-01-01T12:00:30Z")
			ch := schedules.Change{Cron: "* * * * *", Timezone: "UTC", Run: spec(), Overlap: api.OverlapSkip, CatchupSeconds: 60, KeyID: "k"}
			if !c.create {
				sc := w.put("s", "@hourly", "UTC", api.OverlapSkip, 60)
				ch.IfMatch, ch.Paused = &sc.Version, true
			}
			var fired atomic.Bool
			w.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if !strings.HasPrefix(st.Query, c.before) || fired.Swap(true) {
					return nil
				}
				_, err := tx.ExecContext(ctx, c.winner, w.tenant, "s")
				return err
			})
			_, created, err := w.store.Put(w.ctx, w.tenant, "s", ch)
			w.db.SetStatementHook(nil)
			if !fired.Load() {
				t.Fatalf("the hook never met %q", c.before)
			}
			if created || !apperr.Is(err, c.want) {
				t.Fatalf("loser: created=%v err=%v, want %s", created, err, c.want)
			}
			if !c.create {
				if sc := w.get("s"); sc.Paused || sc.NextFireAt == nil {
					t.Fatalf("the refused update's reschedule stayed: %+v", sc)
				}
			}
		})
	}
}
