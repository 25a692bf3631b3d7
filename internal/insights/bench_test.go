package insights_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The 500-day insights benchmarks run on the embedded SQLite (SQL Server is not reachable
// here) over a generated history: LEDGER_BENCH_RUNS runs (default 100,000) spread evenly
// over 500 days, each ended with one attempt (7 agents, 3 releases) and three calls (5
// targets, one in four failed), so 3 calls per run as in issue 30's data set (502k runs,
// 1.5M calls; LEDGER_BENCH_RUNS=502000 builds that size):
//
//	go test ./internal/insights/ -run '^$' -bench 'Insights500Days' -benchtime 5x
//	go test ./internal/insights/ -run '^$' -bench 'OtherTenant' -benchtime 1x
//
// "direct" is the statement over the source tables that answered before the roll-ups (the
// reference store); "rollups" reads InsightCells. cpu-ns/op is the process's CPU time per
// request (user and system), cells/op the roll-up cells it read.

func benchRuns() int {
	if n, err := strconv.Atoi(os.Getenv("LEDGER_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

var benchStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const benchDays = 500

// seedHistory writes n runs of tenant over span from start, as the package comment says
// (multi-row INSERT ... SELECT over a recursive CTE, in chunks; each row its own Version,
// as rows written one by one get).
func seedHistory(b *testing.B, db *sqldb.DB, tenant string, n int, start time.Time, span time.Duration) {
	b.Helper()
	ctx := context.Background()
	step := span.Seconds() / float64(n)
	at := func(offset string) string {
		return `strftime('%Y-%m-%dT%H:%M:%fZ', ` + strconv.FormatInt(start.Unix(), 10) + ` + i * ` +
			strconv.FormatFloat(step, 'f', 3, 64) + ` + ` + offset + `, 'unixepoch')`
	}
	const chunk = 50_000
	for lo := 1; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		seq := `WITH RECURSIVE seq(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM seq WHERE i < ?3) `
		for _, q := range []string{
			seq + `INSERT INTO Runs (RunId, TenantId, ProjectId, Subject, Kind, AgentId, StepId, SnapshotId, Band, State, Epoch,
    Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, EndedAt, Outcome, Depth, CreatedBy, IdempotencyKey, Version)
SELECT printf('00000000-0000-4000-8000-%012x', i), ?1, 'p1', 'subject-' || i, 'kind-' || (i % 2), 'agent-' || (i % 7),
    '00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', 1, 2, 1, 1, 3, 3,
    ` + at("0") + `, ` + at("0") + `, ` + at("(i % 60) + 30") + `,
    CASE WHEN i % 4 = 0 THEN 'failed' ELSE 'succeeded' END, 0, 'bench', 'event-' || i,
    ?4 + 1 + i - ?2 FROM seq ORDER BY i`,
			seq + `INSERT INTO ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, LeaseId, FencingToken, SnapshotId,
    ReleaseId, AgentId, ModelProfileId, State, Phase, MaxCorrections, StartedAt, EndedAt, Version, AdapterVersion)
SELECT printf('00000000-0001-4000-8000-%012x', i), printf('00000000-0000-4000-8000-%012x', i),
    '00000000-0000-4000-8000-000000000001', ?1, 'p1', printf('00000000-0002-4000-8000-%012x', i), 1,
    '00000000-0000-4000-8000-000000000002', 'rel-' || (i % 3), 'agent-' || (i % 7), 'm',
    CASE WHEN i % 4 = 0 THEN 2 ELSE 1 END, 6, 3, ` + at("(i % 60)") + `, ` + at("(i % 60) + 30") + `,
    ?4 + 1 + i - ?2, '1'
FROM seq ORDER BY i`,
			seq + `INSERT INTO CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, Status, StartedAt, EndedAt, Version)
SELECT printf('00000000-0003-4000-8000-%012x', i * 3 + s.n), printf('00000000-0001-4000-8000-%012x', i), ?1, s.n, 1,
    'tool-' || ((i + s.n) % 5), 'r', CASE WHEN (i + s.n) % 4 = 0 THEN 'failed' ELSE 'succeeded' END,
    ` + at("(i % 60) + 1 + s.n") + `, ` + at("(i % 60) + 1 + s.n + ((i * 7 + s.n) % 1000) / 100.0") + `,
    ?4 + 1 + (i - ?2) * 3 + s.n
FROM seq, (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2) AS s ORDER BY i, s.n`,
		} {
			var base int64
			if err := db.Raw().GetContext(ctx, &base, `SELECT Value FROM RowVersionCounter`); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Raw().ExecContext(ctx, q, tenant, lo, hi, base); err != nil {
				b.Fatalf("seed %d..%d: %v", lo, hi, err)
			}
		}
	}
	if _, err := db.Raw().ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWorld is the seeded service: tenant A's history projected, tenant B empty.
type benchWorld struct {
	s    *apitest.Stack
	a, b apitest.Tenant
	w    insights.Window
}

// projection is what catching the insights projector up cost.
type projection struct {
	rows  int
	wall  time.Duration
	cpu   time.Duration
	steps []time.Duration
}

func (p projection) String() string {
	return fmt.Sprintf("the projector caught up in %s (%s CPU, %.1f µs CPU per source row), %d steps: median %s, p99 %s, "+
		"max %s (each holds the writer)", p.wall.Round(time.Millisecond), p.cpu.Round(time.Millisecond),
		float64(p.cpu.Microseconds())/float64(p.rows), len(p.steps), p.steps[len(p.steps)/2].Round(time.Microsecond),
		p.steps[len(p.steps)*99/100].Round(time.Microsecond), p.steps[len(p.steps)-1].Round(time.Microsecond))
}

// project catches the insights projector up, step by step, and measures it.
func project(b *testing.B, db *sqldb.DB) projection {
	b.Helper()
	var before, after sqldb.RowVersion
	if err := db.Raw().Get(&after, `SELECT Value FROM RowVersionCounter`); err != nil {
		b.Fatal(err)
	}
	if s, ok, err := feed.StatusOf(context.Background(), db, insights.ProjectorName); err != nil {
		b.Fatal(err)
	} else if ok {
		before = s.Position
	}
	p := projection{rows: int(after - before)}
	t0, c0 := time.Now(), cpuTime()
	r := feed.NewRunner(db, insights.NewProjector(db, 0), feed.Options{Holder: "bench"})
	for {
		s0 := time.Now()
		st, err := r.Step(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		p.steps = append(p.steps, time.Since(s0))
		if st.CaughtUp {
			break
		}
	}
	p.wall, p.cpu = time.Since(t0), cpuTime()-c0
	slices.Sort(p.steps)
	return p
}

// BenchmarkProjector: the projector's cost per source row (a run, an attempt, a call), for
// a backfill of history spread over 500 days (every row in buckets of its own) and for live
// traffic (LEDGER_BENCH_RUNS/10 runs within 10 minutes, as a busy service writes them).
func BenchmarkProjector(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
		span time.Duration
	}{{"backfill-500d", benchRuns() / 10, benchDays * 24 * time.Hour}, {"live-10m", benchRuns() / 10, 10 * time.Minute}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := dbtest.SQLite().Open(b, dbtest.Options{})
				s := apitest.New(b, apitest.Config{DB: db})
				tn := s.Tenant(b)
				seedHistory(b, db, tn.ID, c.n, benchStart, c.span)
				b.StartTimer()
				p := project(b, db)
				b.ReportMetric(float64(p.cpu.Nanoseconds())/float64(p.rows), "cpu-ns/row")
				b.ReportMetric(float64(p.steps[len(p.steps)-1].Microseconds()), "max-step-µs")
				b.Logf("%s: %d source rows; %s", c.name, p.rows, p)
			}
		})
	}
}

// world builds the seeded service for one benchmark. Its database is the benchmark's, or
// with LEDGER_BENCH_DB the file it names, kept: a run that finds the file and its
// <file>.tenant (tenant A's id, written once the projector has caught up) opens it instead of
// seeding, and the projector catches up on whatever it has not applied (after a change of
// the roll-ups, the projector of this build rebuilds what it keeps differently), so each
// measurement after the first pays minutes, not the half hour of seeding and catching up
// the attacker's 502k runs takes. Delete both files to start afresh.
func world(b *testing.B) *benchWorld {
	b.Helper()
	now := benchStart.Add(benchDays * 24 * time.Hour)
	clock := dbtest.NewClock(now)
	keep := os.Getenv("LEDGER_BENCH_DB")
	target := dbtest.SQLite()
	var tenantA []byte
	if keep != "" {
		target = dbtest.SQLiteFile(keep)
		var err error
		if tenantA, err = os.ReadFile(keep + ".tenant"); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		} else if os.IsNotExist(err) {
			if _, err := os.Stat(keep); err == nil {
				b.Fatalf("%s exists without %s.tenant (a run that did not finish): delete it", keep, keep)
			}
		}
	}
	db := target.Open(b, dbtest.Options{Clock: clock.Now})
	s := apitest.New(b, apitest.Config{DB: db})
	w := &benchWorld{s: s}
	n := benchRuns()
	if len(tenantA) > 0 {
		w.a, w.b = apitest.Tenant{ID: string(tenantA)}, s.Tenant(b)
		st := project(b, db)
		b.Logf("reused %s (tenant %s); %s", keep, tenantA, st)
	} else {
		w.a, w.b = s.Tenant(b), s.Tenant(b)
		t0 := time.Now()
		seedHistory(b, db, w.a.ID, n, benchStart, benchDays*24*time.Hour)
		seeded := time.Since(t0)
		st := project(b, db)
		b.Logf("%d runs, %d attempts, %d calls over %d days: seeded in %s; %s", n, n, 3*n, benchDays,
			seeded.Round(time.Millisecond), st)
		if keep != "" {
			if err := os.WriteFile(keep+".tenant", []byte(w.a.ID), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	from, to, bucket := api.NewTime(benchStart), api.NewTime(now), api.Bucket1d
	w.w = mustResolve(b, now, api.InsightParams{From: &from, To: &to, Bucket: &bucket})
	if w.w.Buckets() != benchDays {
		b.Fatalf("window of %d buckets", w.w.Buckets())
	}
	return w
}

func mustResolve(b *testing.B, now time.Time, p api.InsightParams) insights.Window {
	w, err := insights.Resolve(now, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// benchReads are the 500-day requests of issue 30 item 2.
var benchReads = []struct {
	name string
	read func(ctx context.Context, st *insights.Store, tenant string, w insights.Window) (any, error)
}{
	{"calls", func(ctx context.Context, st *insights.Store, t string, w insights.Window) (any, error) {
		return st.Calls(ctx, t, w, insights.Filter{})
	}},
	{"claim-latency", func(ctx context.Context, st *insights.Store, t string, w insights.Window) (any, error) {
		return st.ClaimLatency(ctx, t, w, insights.Filter{})
	}},
	{"runs-by-release", func(ctx context.Context, st *insights.Store, t string, w insights.Window) (any, error) {
		w.GroupBy = api.GroupRelease
		return st.RunsEnded(ctx, t, w, insights.Filter{})
	}},
	{"attempts-per-run", func(ctx context.Context, st *insights.Store, t string, w insights.Window) (any, error) {
		return st.AttemptsPerRun(ctx, t, w, insights.Filter{})
	}},
}

// BenchmarkInsights500Days: one 500-day request (500 daily buckets) of each heavy insight,
// from the source tables (direct) and from the roll-ups.
func BenchmarkInsights500Days(b *testing.B) {
	w := world(b)
	ctx := context.Background()
	stores := map[string]*insights.Store{"direct": insights.NewReferenceStore(w.s.DB), "rollups": insights.NewStore(w.s.DB)}
	for _, mode := range []string{"direct", "rollups"} {
		for _, r := range benchReads {
			b.Run(mode+"/"+r.name, func(b *testing.B) {
				c0, n0 := cpuTime(), stores[mode].CellsRead()
				for b.Loop() {
					if _, err := r.read(ctx, stores[mode], w.a.ID, w.w); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(stores[mode].CellsRead()-n0)/float64(b.N), "cells/op")
			})
		}
	}
}

// BenchmarkOtherTenant500Days: tenant B's GET /v1/projects latency (200 requests, one at a
// time) while four 500-day calls insights of tenant A run back to back: "direct" runs
// them with the statements that answered before the roll-ups, on the same read pool,
// "rollups" through the service's route.
func BenchmarkOtherTenant500Days(b *testing.B) {
	w := world(b)
	for _, mode := range []string{"direct", "rollups"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				ctx, stop := context.WithCancel(context.Background())
				var heavy atomic.Int64
				var wg sync.WaitGroup
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ref := insights.NewReferenceStore(w.s.DB)
						path := "/v1/insights/calls?bucket=1d&from=" + w.w.From.Format(time.RFC3339) + "&to=" + w.w.To.Format(time.RFC3339)
						for ctx.Err() == nil {
							if mode == "direct" {
								if _, err := ref.Calls(ctx, w.a.ID, w.w, insights.Filter{}); err != nil && ctx.Err() == nil {
									b.Error(err)
									return
								}
							} else if r := w.s.Do(b, http.MethodGet, path, w.a.Admin, "", nil); r.Status != http.StatusOK {
								b.Errorf("insight answered %d", r.Status)
								return
							}
							heavy.Add(1)
						}
					}()
				}
				lat := make([]time.Duration, 0, 200)
				for range 200 {
					t0 := time.Now()
					if r := w.s.Do(b, http.MethodGet, "/v1/projects", w.b.Admin, "", nil); r.Status != http.StatusOK {
						b.Fatalf("projects answered %d", r.Status)
					}
					lat = append(lat, time.Since(t0))
				}
				stop()
				wg.Wait()
				slices.Sort(lat)
				pct := func(p int) float64 { return float64(lat[len(lat)*p/100-1]) / 1e6 }
				b.ReportMetric(pct(50), "p50-ms")
				b.ReportMetric(pct(99), "p99-ms")
				b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
				b.ReportMetric(float64(heavy.Load()), "insights-done")
				b.Logf("%s: B's projects p50 %.2f ms, p99 %.2f ms; %d insights of A answered meanwhile",
					mode, pct(50), pct(99), heavy.Load())
			}
		})
	}
}
