package overview_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/overview"
	"github.com/ledger-dev/ledger/internal/runs"
)

// epoch is in this package's own clock range (dbtest.PackageEpoch): on a shared database no
// other package's reaper takes this package's leases, nor this one's theirs.
var epoch = dbtest.PackageEpoch(time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC))

// TestOverviewCounts: the tenant's overview and the all-tenant read count queued and
// leased runs by band, claim lag and lost leases, and see no other tenant's rows, on every
// dialect.
func TestOverviewCounts(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch, Config: func(c *runs.Config) { c.ReaperBatch = 100 }})
		other := e.Other(t)
		other.Enqueue()
		store := overview.NewStore(e.DB)

		e.Lease() // both leases expire and are lost to the reaper below
		e.Lease()
		e.Enqueue()
		e.Enqueue()
		e.Clock.Advance(time.Duration(apitest.LeaseSeconds+30) * time.Second)
		// At least ours: on a shared SQL Server database the pass may take back other cases' leases too.
		if res, err := e.Svc.Reap(e.Ctx); err != nil || res.TakenBack < 2 {
			t.Fatalf("reap: %+v %v", res, err)
		}
		ov, err := store.Tenant(e.Ctx, e.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		// Both leases expired and were taken back: four queued batch runs, none leased.
		if ov.Queued != [3]int64{0, 4, 0} || ov.Leased != [3]int64{} {
			t.Fatalf("queued %v leased %v, want [0 4 0] and none", ov.Queued, ov.Leased)
		}
		if ov.LostLastHour != 2 {
			t.Errorf("lost in the last hour %d, want 2", ov.LostLastHour)
		}
		// The two never-claimed runs were due at the epoch.
		if lag := ov.ClaimLag(ov.At); lag != time.Duration(apitest.LeaseSeconds+30)*time.Second {
			t.Errorf("claim lag %v", lag)
		}
		if len(ov.Projects) != 1 || ov.Projects[0].ProjectID != "p1" || ov.Projects[0].QueuedTotal() != 4 {
			t.Errorf("projects %+v", ov.Projects)
		}
		if ov.MaxLeasedRuns <= 0 {
			t.Errorf("budget %d", ov.MaxLeasedRuns)
		}

		// An hour later the losses have left the window.
		e.Clock.Advance(overview.LostWindow + time.Second)
		if ov, err = store.Tenant(e.Ctx, e.Tenant); err != nil || ov.LostLastHour != 0 {
			t.Errorf("an hour later: lost %d (%v), want 0", ov.LostLastHour, err)
		}

		e.Claim()
		all, err := store.AllTenants(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		mine, theirs := all.Tenants[e.Tenant], all.Tenants[other.Tenant]
		if mine == nil || theirs == nil {
			t.Fatalf("all tenants: %+v", all.Tenants)
		}
		if mine.Leased != [3]int64{0, 1, 0} || mine.QueuedTotal() != 3 || theirs.QueuedTotal() != 1 || theirs.LeasedTotal() != 0 {
			t.Errorf("mine %+v theirs %+v", *mine, *theirs)
		}
		if ov, err := store.Tenant(e.Ctx, other.Tenant); err != nil || ov.QueuedTotal() != 1 || ov.LostLastHour != 0 {
			t.Errorf("the other tenant's overview: %+v %v", ov, err)
		}
	})
}

// TestOverviewCountsWaitingApart: a parked run waiting on its child is counted as waiting,
// not queued, in the tenant's overview and in the all-tenant read; once the child ends it
// is queued (due) again.
func TestOverviewCountsWaitingApart(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch})
		store := overview.NewStore(e.DB)
		parent := e.Lease()
		child, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, runs.Spec{ProjectID: "p1", Subject: "child-of-" + parent.Run.RunID.String(),
			Kind: "review", AgentID: "agent-1", StepID: parent.Run.StepID, SnapshotID: parent.Run.SnapshotID,
			Band: parent.Run.Band, MaxAttempts: 3, MaxCorrections: 3, ParentRunID: &parent.Run.RunID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Svc.Park(e.Ctx, e.Tenant, parent.Attempt.AttemptID, parent.Lease.FencingToken,
			runs.Park{ChildRunIDs: []uuid.UUID{child.RunID}}); err != nil {
			t.Fatal(err)
		}
		ov, err := store.Tenant(e.Ctx, e.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		if ov.Queued != [3]int64{0, 1, 0} || ov.Waiting != [3]int64{0, 1, 0} || ov.LeasedTotal() != 0 {
			t.Fatalf("queued %v waiting %v leased %v, want the child queued and the parent waiting", ov.Queued, ov.Waiting, ov.Leased)
		}
		if len(ov.Projects) != 1 || ov.Projects[0].WaitingTotal() != 1 {
			t.Fatalf("projects %+v", ov.Projects)
		}
		all, err := store.AllTenants(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c := all.Tenants[e.Tenant]; c == nil || c.Waiting != [3]int64{0, 1, 0} || c.QueuedTotal() != 1 {
			t.Fatalf("all tenants: %+v", c)
		}
		cl := e.Claim()
		e.Complete(cl)
		if ov, err = store.Tenant(e.Ctx, e.Tenant); err != nil || ov.WaitingTotal() != 0 || ov.QueuedTotal() != 1 || ov.OldestDue == nil {
			t.Fatalf("after the child ended: queued %v waiting %v due %v (%v)", ov.Queued, ov.Waiting, ov.OldestDue, err)
		}
	})
}

// TestOverviewCountsARunDueByItsParkQueued: a run parked on a child with a dueAt waits until
// then, and from then on is due (a claim may take it) and so counted queued, not waiting,
// though its child has not ended.
func TestOverviewCountsARunDueByItsParkQueued(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch})
		store := overview.NewStore(e.DB)
		parent := e.Lease()
		child, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, runs.Spec{ProjectID: "p1", Subject: "child-of-" + parent.Run.RunID.String(),
			Kind: "review", AgentID: "agent-1", StepID: parent.Run.StepID, SnapshotID: parent.Run.SnapshotID,
			Band: parent.Run.Band, MaxAttempts: 3, MaxCorrections: 3, ParentRunID: &parent.Run.RunID})
		if err != nil {
			t.Fatal(err)
		}
		at := e.Clock.Now().Add(time.Minute)
		if _, err := e.Svc.Park(e.Ctx, e.Tenant, parent.Attempt.AttemptID, parent.Lease.FencingToken,
			runs.Park{ChildRunIDs: []uuid.UUID{child.RunID}, DueAt: &at}); err != nil {
			t.Fatal(err)
		}
		counts := func(when string) (overview.Tenant, overview.Counts) {
			t.Helper()
			ov, err := store.Tenant(e.Ctx, e.Tenant)
			if err != nil {
				t.Fatal(err)
			}
			all, err := store.AllTenants(e.Ctx)
			if err != nil || all.Tenants[e.Tenant] == nil {
				t.Fatalf("%s: all tenants: %v", when, err)
			}
			return ov, *all.Tenants[e.Tenant]
		}
		if ov, all := counts("before dueAt"); ov.WaitingTotal() != 1 || ov.QueuedTotal() != 1 || all.WaitingTotal() != 1 || all.QueuedTotal() != 1 {
			t.Fatalf("before dueAt: queued %v waiting %v (all tenants: %v %v), want the child queued and the parent waiting",
				ov.Queued, ov.Waiting, all.Queued, all.Waiting)
		}
		e.Clock.Advance(time.Minute + time.Second)
		if ov, all := counts("past dueAt"); ov.WaitingTotal() != 0 || ov.QueuedTotal() != 2 || all.WaitingTotal() != 0 || all.QueuedTotal() != 2 {
			t.Fatalf("past dueAt: queued %v waiting %v (all tenants: %v %v), want both queued", ov.Queued, ov.Waiting, all.Queued, all.Waiting)
		}
	})
}
