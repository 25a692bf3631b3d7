package apitest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// BenchLeases opens a fresh embedded database (the database clock, as in production) with
// one tenant and its project p1, and returns the database, its run service, the tenant and
// n holders' leases, one run each, leased for an hour: where the fenced-write benchmarks of
// an attempt's records start.
func BenchLeases(b *testing.B, n int) (*sqldb.DB, *runs.Service, string, chan runs.Claimed) {
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
	return db, svc, tenant, leases
}
