package checkpoints_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/runs"
)

// holders is how many concurrent lease holders the benchmarks run.
const holders = 16

// benchLeases returns a store on a fresh embedded database, its tenant and n holders'
// leases (apitest.BenchLeases).
func benchLeases(b *testing.B, n int) (*checkpoints.Store, string, chan runs.Claimed) {
	b.Helper()
	db, svc, tenant, leases := apitest.BenchLeases(b, n)
	return checkpoints.NewStore(db, svc), tenant, leases
}

// BenchmarkCheckpointAppend is fenced checkpoint appends by 16 concurrent holders, each on
// its own lease, each appending its next sequence: one op is one append (idempotency
// check, fence, insert, LastCheckpointId).
//
//	go test ./internal/checkpoints -run '^$' -bench CheckpointAppend -benchtime 3s
func BenchmarkCheckpointAppend(b *testing.B) {
	par := max(1, holders/runtime.GOMAXPROCS(0))
	n := par * runtime.GOMAXPROCS(0)
	store, tenant, leases := benchLeases(b, n)
	ctx := context.Background()
	b.SetParallelism(par)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		cl := <-leases
		seq := 0
		for pb.Next() {
			_, created, err := store.Append(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, checkpoints.Draft{
				Sequence: seq, Phase: api.PhaseActing, AdapterStateRef: "blob://state", AdapterVersion: "1", Hash: "h",
			})
			if err != nil || !created {
				b.Errorf("append %d: created=%v err=%v", seq, created, err)
				return
			}
			seq++
		}
	})
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	b.ReportMetric(float64(n), "holders")
}
