package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// BenchmarkCycle is a run's whole life through the service, in process: each of 16 clients
// enqueues a run (Enqueue, its own transaction), claims one (Claim: a lease, an attempt row and
// a fencing token; nothing due: 1 ms sleep and again, as `ledger bench`'s cycle does on a 204)
// and completes it under its token (Complete). Unlike BenchmarkClaimComplete the enqueue is
// timed, and the database is a migrated SQLite file opened by sqldb.Open as `ledger serve`
// opens it, not dbtest's.
//
// One op is one completed run (b.N of them). With PEERS_WINDOW set (a duration) the clients run
// for that window instead, ignoring b.N, and the result is also printed as one
// "PEERS_RESULT {json}" line: that is how ../peers runs it (-test.benchtime 1x) beside River
// and goqite. PEERS_CLIENTS (16) and PEERS_SYNC (normal or full) apply to both modes.
//
// CYCLE_EXTRA_SQL, when set, runs on the writer after the migrations: how BENCHMARKS.md
// prices an index or a trigger (say, "DROP INDEX IX_Attempts_Release") against the same run.
//
// Afterwards every completed run is read back: ended, succeeded, under its first lease. A benchmark
// that lost a completion or skipped the fence would fail here rather than report a rate.
func BenchmarkCycle(b *testing.B) {
	var window time.Duration
	if w := os.Getenv("PEERS_WINDOW"); w != "" {
		var err error
		if window, err = time.ParseDuration(w); err != nil || window <= 0 {
			b.Fatalf("PEERS_WINDOW %q: want a positive duration", w)
		}
	}
	clients := 16
	if c := os.Getenv("PEERS_CLIENTS"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n <= 0 {
			b.Fatalf("PEERS_CLIENTS %q: want a positive integer", c)
		}
		clients = n
	}
	syncMode := os.Getenv("PEERS_SYNC")
	if syncMode == "" {
		syncMode = "normal"
	}
	svc, caller := cycleEnv(b, syncMode)
	ctx := context.Background()

	var (
		seq                              atomic.Int64 // runs enqueued, all clients
		left                             atomic.Int64 // cycles still to start (b.N mode)
		completed, enqueued, errs, empty atomic.Int64
		lastErr                          atomic.Value
		mu                               sync.Mutex
		done                             []uuid.UUID
		wg                               sync.WaitGroup
	)
	left.Store(int64(b.N))
	fail := func(err error) { errs.Add(1); lastErr.Store(err.Error()) }
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	start := time.Now()
	end := start.Add(window)
	more := func() bool {
		if window > 0 {
			return time.Now().Before(end)
		}
		return left.Add(-1) >= 0
	}
	inWindow := func() bool { return window == 0 || time.Now().Before(end) }
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("cycle-%d", c)
			var mine []uuid.UUID
			defer func() { mu.Lock(); done = append(done, mine...); mu.Unlock() }()
			for more() {
				n := seq.Add(1)
				s := spec(fmt.Sprintf("cycle-%d", n), func(s *runs.Spec) {
					s.ProjectID = fmt.Sprintf("p%d", n%10)
					s.AgentID = fmt.Sprintf("agent-%d", n%16)
				})
				if _, _, err := svc.Enqueue(ctx, caller, s); err != nil {
					fail(err)
					continue
				}
				if inWindow() {
					enqueued.Add(1)
				}
				var cl runs.Claimed
				claimed := false
				for !claimed && inWindow() {
					var err error
					cl, err = svc.Claim(ctx, caller, claimReq(holder))
					switch {
					case err == nil:
						claimed = true
					case errors.Is(err, runs.ErrNothingToClaim):
						empty.Add(1)
						time.Sleep(time.Millisecond)
					default:
						fail(err)
						return
					}
				}
				if !claimed {
					continue
				}
				if _, err := svc.Complete(ctx, caller.TenantID, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptSucceeded}); err != nil {
					fail(err)
					continue
				}
				mine = append(mine, cl.Run.RunID)
				if inWindow() {
					completed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if errs.Load() > 0 {
		b.Fatalf("%d errors, the last: %v", errs.Load(), lastErr.Load())
	}
	if window == 0 && completed.Load() != int64(b.N) {
		b.Fatalf("completed %d runs, want b.N = %d", completed.Load(), b.N)
	}
	if window == 0 {
		window = elapsed
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(max(1, completed.Load())), "cpu-ns/op")
	b.ReportMetric(float64(completed.Load())/window.Seconds(), "runs/s")
	for _, id := range done {
		r, err := svc.Get(ctx, caller.TenantID, id)
		if err != nil {
			b.Fatalf("run %s: %v", id, err)
		}
		if r.State != api.RunEnded || r.Outcome == nil || *r.Outcome != api.OutcomeSucceeded || r.Epoch != 1 {
			b.Fatalf("run %s: state %s outcome %v epoch %d, want ended, succeeded, under its first lease", id, r.State, r.Outcome, r.Epoch)
		}
	}
	if os.Getenv("PEERS_WINDOW") == "" {
		return
	}
	out, err := json.Marshal(map[string]any{
		"system":    "ledger cycle (in-process)",
		"storage":   "SQLite WAL (modernc), synchronous=" + syncMode,
		"transport": "in-process",
		"completed": completed.Load(),
		"seconds":   window.Seconds(),
		"inserted":  enqueued.Load(),
		"errors":    errs.Load(),
		"note": fmt.Sprintf("BenchmarkCycle (./internal/runs): %d clients x (Enqueue, Claim, Complete) through runs.Service; %d claims found nothing",
			clients, empty.Load()),
	})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Println("PEERS_RESULT " + string(out))
}

// cycleEnv is a fresh migrated SQLite file opened by sqldb.Open (as `ledger serve` opens its
// --db) with the given synchronous setting, one tenant without a lease budget and 10 projects.
func cycleEnv(b *testing.B, syncMode string) (*runs.Service, runs.Caller) {
	b.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: filepath.Join(b.TempDir(), "ledger.db"), SQLiteSync: syncMode})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		b.Fatal(err)
	}
	err = mg.Up()
	mg.Close()
	if err != nil {
		b.Fatal(err)
	}
	if x := os.Getenv("CYCLE_EXTRA_SQL"); x != "" {
		if _, err := db.Raw().ExecContext(ctx, x); err != nil {
			b.Fatal(err)
		}
	}
	tenant := "cycle"
	if err := tenancy.NewStore(db).SetMaxLeased(ctx, tenant, 1<<30); err != nil {
		b.Fatal(err)
	}
	for p := range 10 {
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, fmt.Sprintf("p%d", p), projects.Change{}); err != nil {
			b.Fatal(err)
		}
	}
	return runs.NewService(db, runs.DefaultConfig(), nil), runs.Caller{TenantID: tenant, KeyID: "cycle"}
}
