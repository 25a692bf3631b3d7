package calls_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
)

// holders is how many concurrent lease holders the benchmark runs.
const holders = 16

// BenchmarkCallRecord is the life of a call by 16 concurrent holders, each on its own lease
// on a fresh embedded database (database clock, as in production): one op records a
// started call and finishes it, two fenced writes.
//
//	go test ./internal/calls -run '^$' -bench CallRecord -benchtime 3s
func BenchmarkCallRecord(b *testing.B) {
	ctx := context.Background()
	par := max(1, holders/runtime.GOMAXPROCS(0))
	n := par * runtime.GOMAXPROCS(0)
	db, svc, tenant, leases := apitest.BenchLeases(b, n)
	store := calls.NewStore(db, svc)
	receipt := "receipt://ok"
	b.SetParallelism(par)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		cl := <-leases
		seq := 0
		for pb.Next() {
			c, created, err := store.Record(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				calls.Draft{Sequence: seq, Kind: api.CallModel, Target: "model://a", RequestHash: "r"})
			if err != nil || !created {
				b.Errorf("record %d: created=%v err=%v", seq, created, err)
				return
			}
			if _, err := store.FinishCall(ctx, tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
				calls.Finish{Status: api.CallSucceeded, ReceiptRef: &receipt}); err != nil {
				b.Errorf("finish %d: %v", seq, err)
				return
			}
			seq++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(n), "holders")
}
