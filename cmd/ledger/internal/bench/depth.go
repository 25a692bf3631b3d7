package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// The seeding's shape: jobs of seedJob runs, seedJobs of them submitted at once, so the
// group commit puts many jobs in one transaction. Both sizes matter. Each job runs in its
// own savepoint, and SQLite walks the savepoint's journal at the end of every statement, so
// a job's cost grows with the square of its size once its inserts land on distinct pages
// (2,000 runs a job seeded 50k runs in 36 s into an empty file and in 4 min past 100k;
// 100 a job, 64 at once, 15 s for each 50k up to 150k, the savepoint walk down from 76 %
// of the CPU to 16 %). And run ids are random in their leading (text) bytes, so every
// commit rewrites most leaves of the run-id index into the WAL: many jobs to a commit keep
// that rare. A group of one job without a savepoint would let one large job do.
const (
	seedJob  = 100
	seedJobs = 64
)

// depth measures claim latency with the queue at each of cfg.DepthSizes: the projects and
// the release are made through the API on a fresh server, which is then stopped; the runs
// are queued into the file through the runs service in large transactions (far quicker
// than a million requests), and a restarted server answers DepthClaims claims one after
// another, each completed untimed.
func (b *bencher) depth(ctx context.Context, syncMode, dir string) error {
	path := filepath.Join(dir, "depth.db")
	b.logf("[%s] depth: starting a server on a fresh database", syncMode)
	srv, err := startServer(ctx, b.cfg.ServerBinary, path, syncMode, b.cfg.StartTimeout)
	if err != nil {
		return err
	}
	k := keysOf(srv)
	t := &target{c: newClient(srv.URL, b.cfg.RequestTimeout, 4), keys: k, sync: syncMode, dir: dir}
	err = func() error {
		if k.admin == "" || k.runtime == "" {
			return errors.New("the server printed no bootstrap keys: is the database really new?")
		}
		var err error
		if t.routes, err = t.c.routes(ctx); err != nil {
			return err
		}
		return b.setup(ctx, t)
	}()
	t.c.close()
	if serr := srv.Stop(30 * time.Second); err == nil && serr != nil {
		err = fmt.Errorf("stop server: %w", serr)
	}
	if err != nil {
		return err
	}
	if miss := t.routes.missing(depthRoutes...); len(miss) > 0 {
		for _, size := range b.cfg.DepthSizes {
			r := unavailable(Depth, syncMode, 1, miss)
			r.Queued = size
			b.add(r)
		}
		return nil
	}

	var rows []Result
	defer func() { b.add(rows...) }()
	queued := 0
	for i, size := range b.cfg.DepthSizes {
		start := time.Now()
		if err := b.seed(ctx, path, syncMode, k.runtime, size-queued); err != nil {
			return fmt.Errorf("seed the depth queue: %w", err)
		}
		seeded := time.Since(start)
		queued = size
		b.logf("[%s] depth: %d runs queued (seeded in %.1fs); restarting the server", syncMode, size, seeded.Seconds())
		srv, err := startServer(ctx, b.cfg.ServerBinary, path, syncMode, b.cfg.StartTimeout)
		if err != nil {
			return err
		}
		t.c = newClient(srv.URL, b.cfg.RequestTimeout, 4)
		row, claims := b.claimDepth(ctx, t, size)
		row.SeedSeconds = round(seeded.Seconds(), 1)
		queued -= claims
		rows = append(rows, row)
		if i == len(b.cfg.DepthSizes)-1 && !b.cfg.NoReferences && ctx.Err() == nil {
			driver := b.driverBaseline(ctx, dir, syncMode, 1)
			ceiling := b.httpCeiling(ctx, t, 1)
			b.add(driver, ceiling)
			for j := range rows {
				if rows[j].Status == StatusOK {
					rows[j].compare(driver.OpsPerSec, ceiling.OpsPerSec)
				}
			}
		}
		t.c.close()
		if err := srv.Stop(30 * time.Second); err != nil {
			b.logf("[%s] stop server: %v", syncMode, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if len(rows) > 1 && rows[0].P50Ms > 0 && rows[len(rows)-1].Status == StatusOK {
		last := &rows[len(rows)-1]
		last.Note = joinNote(last.Note, fmt.Sprintf("claim p50 %.2fx that at %s queued", last.P50Ms/rows[0].P50Ms, shortCount(rows[0].Queued)))
	}
	return nil
}

// claimDepth times DepthClaims claims, one after another, completing each untimed. The row's
// ops/s is claims per second of claiming.
func (b *bencher) claimDepth(ctx context.Context, t *target, size int) (Result, int) {
	rec := NewRecorder()
	stop := b.monitor(ctx, t, fmt.Sprintf("depth/%s", shortCount(size)), rec)
	claims, empty := 0, false
	for tries := 0; claims < b.cfg.DepthClaims && tries < 2*b.cfg.DepthClaims && ctx.Err() == nil; tries++ {
		var cl claimed
		a, ok := t.c.timed(ctx, rec, http.MethodPost, "/v1/runs/claim", t.keys.runtime, b.claimBody(t, 0, 60), &cl)
		if !ok {
			if !transient(a) {
				break
			}
			backoff(ctx, a)
			continue
		}
		if a.status == http.StatusNoContent {
			empty = true
			break
		}
		claims++
		_, _ = t.c.do(ctx, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/complete", t.keys.runtime,
			completeBody(cl.Lease.FencingToken), nil)
	}
	row := Result{Workload: Depth, Queued: size, Sync: t.sync, Clients: 1, RSSMiB: stop()}
	h, errs := rec.Snapshot()
	row.fill(h, errs, h.Sum())
	if empty {
		row.Note = joinNote(row.Note, fmt.Sprintf("the queue ran dry after %d claims", claims))
	}
	if claims == 0 {
		row.Status = StatusFailed
		row.Note = joinNote(row.Note, "no claim succeeded: "+errorText(errs))
	}
	return row, claims
}

var seedCounter atomic.Int64

// seed queues n runs into the SQLite file at path while no server runs: 10 projects,
// unique subjects, band batch, for the tenant whose runtime key the bench holds. Every run
// is queued by the run-lease core's own EnqueueTx (the service's writes, not a copy of
// them), in jobs of seedJob runs, seedJobs at once.
func (b *bencher) seed(ctx context.Context, path, syncMode, runtimeKey string, n int) error {
	if n <= 0 {
		return nil
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, SQLiteSync: syncMode, Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := tenancy.NewStore(db).Authenticate(ctx, runtimeKey)
	if err != nil {
		return fmt.Errorf("find the tenant of the runtime key: %w", err)
	}
	svc := runs.NewService(db, runs.DefaultConfig(), log)
	caller := runs.Caller{TenantID: p.TenantID, KeyID: p.KeyID}

	var done atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(max(b.cfg.Progress, time.Second))
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				d := done.Load()
				b.logf("[%s] depth: seeding %d/%d runs (%.0f runs/s)", syncMode, d, n, float64(d)/now.Sub(start).Seconds())
			}
		}
	}()
	var (
		handed atomic.Int64 // runs handed to jobs
		wg     sync.WaitGroup
		errc   = make(chan error, seedJobs)
	)
	for range seedJobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				from := handed.Add(int64(seedJob)) - int64(seedJob)
				batch := min(int64(seedJob), int64(n)-from)
				if batch <= 0 {
					return
				}
				err := db.Write(ctx, sqldb.TenantScope(p.TenantID), func(tx *sqldb.Tx) error {
					for range batch {
						i := seedCounter.Add(1)
						spec := runs.Spec{
							ProjectID: fmt.Sprintf("p%d", i%benchProjects), Subject: fmt.Sprintf("bench-%s-seed-%d", b.tag, i),
							Kind: "bench", AgentID: fmt.Sprintf("bench-agent-%d", i%16), StepID: uuid.New(), SnapshotID: uuid.New(),
							Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3,
						}
						if _, _, err := svc.EnqueueTx(ctx, tx, caller, spec); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errc <- err
					return
				}
				done.Add(batch)
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Fold the bulk load's write-ahead log into the database now: otherwise the server's
	// first writes pay for checkpointing a million rows, and the timed claims measure that
	// one-off cost instead of the claim.
	if _, err := db.Raw().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint the seeded database: %w", err)
	}
	return nil
}
