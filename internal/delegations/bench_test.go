package delegations_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// BenchmarkChainWrite is a claim and a release (due again at once) of one run with a
// parent run, through the run-lease core with the delegation hooks: a fresh run, and the
// last run of a 1,000-long chain of continuations (the issue measured 2.8 ms against
// 40.7 ms). It reports the statements each claim and release sent.
func BenchmarkChainWrite(b *testing.B) {
	for _, c := range []struct {
		name string
		hops int
	}{{"fresh", 0}, {"chain=1000", 999}} {
		b.Run(c.name, func(b *testing.B) {
			db := dbtest.SQLite().Open(b, dbtest.Options{})
			ctx := context.Background()
			tenant := dbtest.NewTenant(b, db)
			if _, _, err := projects.NewStore(db).Put(ctx, tenant, "p1", projects.Change{}); err != nil {
				b.Fatal(err)
			}
			svc := runs.NewService(db, runs.DefaultConfig(), nil)
			svc.AddHooks(delegations.Hooks())
			caller := runs.Caller{TenantID: tenant, KeyID: "bench"}
			enqueue := func(subject string, parent *uuid.UUID) runs.Run {
				r, _, err := svc.Enqueue(ctx, caller, runs.Spec{ProjectID: "p1", Subject: subject, Kind: "bench", AgentID: subject,
					StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 1000, MaxCorrections: 3, ParentRunID: parent})
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			root := enqueue("root", nil)
			r := enqueue("child", &root.RunID)
			for range c.hops {
				if _, err := svc.Cancel(ctx, tenant, r.RunID); err != nil {
					b.Fatal(err)
				}
				next, _, err := svc.Continue(ctx, caller, r.RunID, runs.Continuation{})
				if err != nil {
					b.Fatal(err)
				}
				r = next
			}
			var statements atomic.Int64
			db.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error { statements.Add(1); return nil })
			due := runs.Release{RetryAfter: new(time.Duration)}
			req := runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m", AgentIDs: []string{"child"}}
			b.ResetTimer()
			for b.Loop() {
				cl, err := svc.Claim(ctx, caller, req)
				if err != nil {
					b.Fatal(err)
				}
				if cl.Run.RunID != r.RunID {
					b.Fatalf("claimed %s, want the chain's last run %s", cl.Run.RunID, r.RunID)
				}
				if _, err := svc.Release(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, due); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(statements.Load())/float64(b.N), "statements/op")
		})
	}
}
