package runs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// BenchmarkClaimPick is the claim's seek alone (SQLite): the pick among 1,000 queued
// heads over 10 projects, read-only, so the cost of the window shows without the writes.
//
//	go test ./internal/runs -run '^$' -bench ClaimPick
func BenchmarkClaimPick(b *testing.B) {
	ctx := context.Background()
	db := dbtest.SQLite().Open(b, dbtest.Options{})
	svc := NewService(db, DefaultConfig(), nil)
	tenant := dbtest.NewTenant(b, db)
	for p := range 10 {
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, fmt.Sprintf("p%d", p), projects.Change{}); err != nil {
			b.Fatal(err)
		}
	}
	c := Caller{TenantID: tenant, KeyID: "k"}
	err := db.Write(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		for i := range 1000 {
			if _, _, err := svc.EnqueueTx(ctx, tx, c, Spec{ProjectID: fmt.Sprintf("p%d", i%10), Subject: fmt.Sprintf("s%d", i),
				Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		err := db.Read(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			var cand Run
			return tx.GetContext(ctx, &cand, svc.q.claimCandidates[0], tenant, tx.Dialect.Time(now), tx.Dialect.Time(now),
				64, "[]", "[]", "[]", "[]")
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
