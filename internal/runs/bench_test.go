package runs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// benchEnv is a fresh embedded database with n queued runs over 10 projects, unique
// subjects, band batch (the queue of the depth workload).
func benchEnv(b *testing.B, n int) (*runs.Service, runs.Caller) {
	b.Helper()
	db := dbtest.SQLite().Open(b, dbtest.Options{})
	ctx := context.Background()
	tenant := "bench"
	store := tenancy.NewStore(db)
	if err := store.SetMaxLeased(ctx, tenant, 1<<30); err != nil {
		b.Fatal(err)
	}
	for p := range 10 {
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, fmt.Sprintf("p%d", p), projects.Change{}); err != nil {
			b.Fatal(err)
		}
	}
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	caller := runs.Caller{TenantID: tenant, KeyID: "bench"}
	enqueueBulk(b, db, svc, caller, 0, n)
	return svc, caller
}

var benchSubject atomic.Int64

// enqueueBulk queues n runs in batches of 5,000 per transaction, so a deep queue is quick
// to build; the runs are the same as single enqueues make.
func enqueueBulk(b *testing.B, db *sqldb.DB, svc *runs.Service, c runs.Caller, _ int, n int) {
	b.Helper()
	ctx := context.Background()
	for done := 0; done < n; {
		batch := min(5000, n-done)
		err := db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
			for range batch {
				i := benchSubject.Add(1)
				s := spec(fmt.Sprintf("subject:%d", i), func(s *runs.Spec) { s.ProjectID = fmt.Sprintf("p%d", i%10) })
				if _, _, err := svc.EnqueueTx(ctx, tx, c, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}

// BenchmarkClaimComplete is the whole lease of a run: claim, then complete, by 16
// concurrent holders.
func BenchmarkClaimComplete(b *testing.B) {
	svc, caller := benchEnv(b, b.N+16*b.N/100+100)
	ctx := context.Background()
	b.SetParallelism(8) // 8 x GOMAXPROCS(2) = 16 holders
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cl, err := svc.Claim(ctx, caller, claimReq("h"))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := svc.Complete(ctx, caller.TenantID, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFencedWrite is a fenced write (a heartbeat) by 16 holders of 16 leases.
func BenchmarkFencedWrite(b *testing.B) {
	svc, caller := benchEnv(b, 16)
	ctx := context.Background()
	leases := make(chan runs.Claimed, 16)
	for range 16 {
		cl, err := svc.Claim(ctx, caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m", LeaseSeconds: 3600})
		if err != nil {
			b.Fatal(err)
		}
		leases <- cl
	}
	b.SetParallelism(8)
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		cl := <-leases
		for pb.Next() {
			if _, err := svc.Heartbeat(ctx, caller.TenantID, cl.Attempt.AttemptID, cl.Lease.FencingToken, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkClaimDepth is the latency of one claim with 1k and with 100k runs queued: the
// claim seeks the index, so it must not grow with the queue.
func BenchmarkClaimDepth(b *testing.B) {
	for _, depth := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", depth), func(b *testing.B) {
			svc, caller := benchEnv(b, depth+b.N)
			ctx := context.Background()
			b.ResetTimer()
			var total time.Duration
			for range b.N {
				start := time.Now()
				cl, err := svc.Claim(ctx, caller, claimReq("h"))
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := svc.Complete(ctx, caller.TenantID, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptSucceeded}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "claim-µs")
		})
	}
}

// BenchmarkListNotProjects is a page of the runs list over 10,000 queued runs of 10
// projects, without a not* list and leaving out 9 of the projects plus 41 absent ones (an
// insight's "other" link names up to 50 groups): the price of the list, a residual per run
// read, the page needing about ten times the rows.
func BenchmarkListNotProjects(b *testing.B) {
	svc, caller := benchEnv(b, 10_000)
	ctx := context.Background()
	var many []string
	for p := range 50 {
		many = append(many, fmt.Sprintf("p%d", p+1))
	}
	for _, c := range []struct {
		name string
		not  []string
	}{{"none", nil}, {"50", many}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rs, err := svc.List(ctx, caller.TenantID, runs.ListFilter{Limit: 51, NotProjectIDs: c.not})
				if err != nil || len(rs) != 51 {
					b.Fatalf("%v, %d runs", err, len(rs))
				}
			}
		})
	}
}

// BenchmarkGet is one run read by id through the service (a reader transaction of its own),
// as GET /v1/runs/{id} reads it and BenchmarkCycle's read-back does once per completed run.
func BenchmarkGet(b *testing.B) {
	svc, caller := cycleEnv(b, "normal")
	ctx := context.Background()
	r, _, err := svc.Enqueue(ctx, caller, spec("get"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got, err := svc.Get(ctx, caller.TenantID, r.RunID)
		if err != nil || got.RunID != r.RunID {
			b.Fatalf("get: %v, %v", got.RunID, err)
		}
	}
}
