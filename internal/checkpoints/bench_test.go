package checkpoints_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
)

// holders is how many concurrent lease holders the benchmarks run.
const holders = 16

// benchLeases opens a fresh embedded database (the database clock, as in production) and
// returns n holders' leases, one run each, leased for an hour.
func benchLeases(b *testing.B, n int) (*checkpoints.Store, string, chan runs.Claimed) {
	b.Helper()
	ctx := context.Background()
	db := dbtest.SQLite().Open(b, dbtest.Options{})
	tenant := dbtest.NewTenant(b, db)
	if _, _, err := projects.NewStore(db).Put(ctx, tenant, "p1", projects.Change{}); err != nil {
		b.Fatal(err)
	}
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	caller := runs.Caller{TenantID: tenant, KeyID: "bench"}
	leases := make(chan runs.Claimed, n)
	for i := range n {
		if _, _, err := svc.Enqueue(ctx, caller, runs.Spec{ProjectID: "p1", Subject: fmt.Sprintf("bench-%d", i), Kind: "k",
			AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), MaxAttempts: 3}); err != nil {
			b.Fatal(err)
		}
		cl, err := svc.Claim(ctx, caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m", LeaseSeconds: 3600})
		if err != nil {
			b.Fatal(err)
		}
		leases <- cl
	}
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
