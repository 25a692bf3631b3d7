package operations

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
)

// BenchmarkBulkCancelWhileClaiming: a bulk cancel of 10,000 queued runs (batches of 200)
// while another tenant's worker claims and completes runs all along; it reports the claims'
// p99 latency and the operation's duration. Not asserted (BENCHMARKS.md).
func BenchmarkBulkCancelWhileClaiming(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	db := dbtest.SQLite().Open(b, dbtest.Options{})
	rs := runs.NewService(db, runs.DefaultConfig(), nil)
	store := NewStore(db, rs)
	admin, worker := dbtest.NewTenant(b, db), dbtest.NewTenant(b, db)
	for _, tn := range []string{admin, worker} {
		if _, _, err := projects.NewStore(db).Put(ctx, tn, "p1", projects.Change{}); err != nil {
			b.Fatal(err)
		}
	}
	spec := func() runs.Spec {
		return runs.Spec{ProjectID: "p1", Subject: "s:" + uuid.NewString(), Kind: "eval", AgentID: "a1", StepID: uuid.New(),
			SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3, Tags: []string{"bulk"}}
	}
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < n; i += 500 {
			specs := make([]runs.Spec, 500)
			for j := range specs {
				specs[j] = spec()
			}
			if _, err := rs.EnqueueBatch(ctx, runs.Caller{TenantID: admin, KeyID: "k"}, specs); err != nil {
				b.Fatal(err)
			}
		}
		op, _, err := store.Create(ctx, runs.Caller{TenantID: admin, KeyID: "k"},
			api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{State: api.Ptr(api.RunQueued), Tag: api.Ptr("bulk")}})
		if err != nil || op.Matched != n {
			b.Fatalf("create: %+v %v", op, err)
		}
		stop := make(chan struct{})
		var (
			wg    sync.WaitGroup
			lat   []time.Duration
			claim = runs.Caller{TenantID: worker, KeyID: "w"}
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := rs.Enqueue(ctx, claim, spec()); err != nil {
					b.Error(err)
					return
				}
				start := time.Now()
				cl, err := rs.Claim(ctx, claim, runs.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
				lat = append(lat, time.Since(start))
				if errors.Is(err, runs.ErrNothingToClaim) {
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := rs.Complete(ctx, worker, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
		b.StartTimer()
		start := time.Now()
		if done, err := NewRunner(db, rs, RunnerConfig{Holder: "bench"}).Tick(ctx); err != nil || done != 1 {
			b.Fatalf("tick: %d %v", done, err)
		}
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		wg.Wait()
		slices.Sort(lat)
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "claim-p99-ms")
			b.ReportMetric(float64(len(lat)), "claims")
		}
		b.ReportMetric(took.Seconds(), "bulk-s")
		b.StartTimer()
	}
}
