package retention_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/retention"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// env is one case's world. Purge works across tenants, so every case has its own database
// (and its own clock) rather than only its own tenant.
type env struct {
	t      *testing.T
	ctx    context.Context
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	tenant string
	caller runs.Caller
	n      int
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	e := &env{t: t, ctx: context.Background(), db: db, clock: clock, svc: runs.NewService(db, runs.DefaultConfig(), nil)}
	e.tenant = e.newTenant()
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "test-key"}
	return e
}

// newTenant makes a tenant with project "short" (30 days' retention) and "long" (90).
func (e *env) newTenant() string {
	e.t.Helper()
	tenant := dbtest.NewTenant(e.t, e.db)
	for id, n := range map[string]int{"short": 30, "long": 90} {
		days := n
		if _, _, err := projects.NewStore(e.db).Put(e.ctx, tenant, id, projects.Change{RetentionDays: &days}); err != nil {
			e.t.Fatal(err)
		}
	}
	return tenant
}

type specOpt func(*runs.Spec)

func key(k string) specOpt        { return func(s *runs.Spec) { s.IdempotencyKey = &k } }
func parent(id uuid.UUID) specOpt { return func(s *runs.Spec) { s.ParentRunID = &id } }

func (e *env) spec(project string, opts ...specOpt) runs.Spec {
	e.n++
	s := runs.Spec{ProjectID: project, Subject: fmt.Sprintf("subject-%d", e.n), Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 5, MaxCorrections: 3}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func (e *env) enqueue(c runs.Caller, project string, opts ...specOpt) runs.Run {
	e.t.Helper()
	r, created, err := e.svc.Enqueue(e.ctx, c, e.spec(project, opts...))
	if err != nil || !created {
		e.t.Fatalf("enqueue: created=%v err=%v", created, err)
	}
	return r
}

// claim claims the tenant's one due run and checks it is want.
func (e *env) claim(c runs.Caller, want uuid.UUID) runs.Claimed {
	e.t.Helper()
	cl, err := e.svc.Claim(e.ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	if cl.Run.RunID != want {
		e.t.Fatalf("claimed run %s, want %s", cl.Run.RunID, want)
	}
	return cl
}

func (e *env) complete(c runs.Caller, cl runs.Claimed) {
	e.t.Helper()
	if _, err := e.svc.Complete(e.ctx, c.TenantID, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		runs.Completion{State: api.AttemptFailed}); err != nil {
		e.t.Fatalf("complete: %v", err)
	}
}

// endedChain makes a chain of 1+continuations runs in project, each claimed once and ended
// now; it returns the runs and the attempts.
func (e *env) endedChain(c runs.Caller, project string, continuations int, opts ...specOpt) ([]uuid.UUID, []runs.Claimed) {
	e.t.Helper()
	r := e.enqueue(c, project, opts...)
	var runIDs []uuid.UUID
	var cls []runs.Claimed
	for i := 0; ; i++ {
		cl := e.claim(c, r.RunID)
		e.complete(c, cl)
		runIDs, cls = append(runIDs, r.RunID), append(cls, cl)
		if i == continuations {
			return runIDs, cls
		}
		next, created, err := e.svc.Continue(e.ctx, c, r.RunID, runs.Continuation{})
		if err != nil || !created {
			e.t.Fatalf("continue: %v", err)
		}
		r = next
	}
}

// Child rows of an attempt, written with plain SQL (their own packages are not needed).
var childSQL = map[string][]string{
	"sqlite": {
		`INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, Hash, CreatedAt)
VALUES (?1, ?2, ?3, ?4, 1, 'state://x', '1', 'h', ?5)`,
		`INSERT INTO CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, Status, StartedAt, Version)
VALUES (?1, ?2, ?3, ?4, 0, 'model', 'r', 'succeeded', ?5, (SELECT Value + 1 FROM RowVersionCounter))`,
		`INSERT INTO DecisionRequests (DecisionId, AttemptId, TenantId, Kind, Status, RequestedAt, Version)
VALUES (?1, ?2, ?3, 0 * ?4, 'cancelled', ?5, (SELECT Value + 1 FROM RowVersionCounter))`,
		`INSERT INTO SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth, Status, CreatedAt, Version)
VALUES (?1, ?2, ?3, ?1, 'child', 'p', ?4, 'failed', ?5, (SELECT Value + 1 FROM RowVersionCounter))`,
	},
	"sqlserver": {
		`INSERT INTO dbo.Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, Hash, CreatedAt)
VALUES (@p1, @p2, @p3, @p4, 1, N'state://x', N'1', N'h', @p5);`,
		`INSERT INTO dbo.CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, Status, StartedAt)
VALUES (@p1, @p2, @p3, @p4, 0, N'model', N'r', N'succeeded', @p5);`,
		`INSERT INTO dbo.DecisionRequests (DecisionId, AttemptId, TenantId, Kind, Status, RequestedAt)
VALUES (@p1, @p2, @p3, 0 * @p4, N'cancelled', @p5);`,
		`INSERT INTO dbo.SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth, Status, CreatedAt)
VALUES (@p1, @p2, @p3, @p1, N'child', N'p', @p4, N'failed', @p5);`,
	},
}

// children writes n rows of each child table under the attempt.
func (e *env) children(cl runs.Claimed, n int) {
	e.t.Helper()
	err := e.db.Write(e.ctx, sqldb.TenantScope(cl.Attempt.TenantID), func(tx *sqldb.Tx) error {
		for i := 1; i <= n; i++ {
			for _, q := range childSQL[tx.Dialect.Name()] {
				if _, err := tx.ExecContext(e.ctx, q, ids.New(), cl.Attempt.AttemptID, cl.Attempt.TenantID, i,
					tx.Dialect.Time(e.clock.Now())); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("insert children: %v", err)
	}
}

var tables = []string{"Runs", "ExecutionAttempts", "Checkpoints", "CallRecords", "DecisionRequests", "SubAgentDelegations",
	"IdempotencyTombstones", "PurgeBacklog"}

// count returns the rows of each table of the tenant.
func (e *env) count(tenant string) map[string]int {
	e.t.Helper()
	out := map[string]int{}
	err := e.db.Read(e.ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		for _, tbl := range tables {
			q := `SELECT COUNT(*) FROM ` + tbl + ` WHERE TenantId = ?1`
			if tx.Dialect.Name() == "sqlserver" {
				q = `SELECT COUNT(*) FROM dbo.` + tbl + ` WHERE TenantId = @p1;`
			}
			var n int
			if err := tx.GetContext(e.ctx, &n, q, tenant); err != nil {
				return err
			}
			out[tbl] = n
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) exists(tenant string, run uuid.UUID) bool {
	e.t.Helper()
	_, err := e.svc.Get(e.ctx, tenant, run)
	if err != nil && !apperr.Is(err, api.CodeNotFound) {
		e.t.Fatal(err)
	}
	return err == nil
}

func (e *env) purge(opts retention.Options) retention.Result {
	e.t.Helper()
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	res, err := retention.Purge(e.ctx, e.db, opts)
	if err != nil {
		e.t.Fatalf("purge: %v", err)
	}
	if res.FailedBatches != 0 {
		e.t.Fatalf("purge skipped %d failed batches: %+v", res.FailedBatches, res)
	}
	return res
}

func TestPurge(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Run("OldChainsGoWithChildrenAndTombstones", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			c := e.caller
			// Old and purgeable: a continued chain with an idempotency key and one row of each
			// kind under each attempt, and a single-run chain.
			chainA, clsA := e.endedChain(c, "short", 1, key("event-1"))
			for _, cl := range clsA {
				e.children(cl, 2)
			}
			chainB, _ := e.endedChain(c, "short", 0)
			// Old but never touched: a leased run, a queued run, and an ended root whose
			// continuation is still queued.
			leased := e.enqueue(c, "short")
			e.claim(c, leased.RunID)
			rootF, _ := e.endedChain(c, "short", 0, key("event-f"))
			contF, _, err := e.svc.Continue(e.ctx, c, rootF[0], runs.Continuation{DueAt: ptr(epoch.Add(365 * day))})
			if err != nil {
				t.Fatal(err)
			}
			queued := e.enqueue(c, "short", func(s *runs.Spec) { s.DueAt = ptr(epoch.Add(365 * day)) })
			e.clock.Advance(31 * day)
			// Young: ended just now.
			young, _ := e.endedChain(c, "short", 0, key("event-young"))

			before := e.count(e.tenant)
			res := e.purge(retention.Options{})
			want := retention.Result{Chains: 2, Runs: 3, Attempts: 3, Checkpoints: 4, Calls: 4, Decisions: 4,
				Delegations: 4, Tombstones: 1, Batches: 1}
			if res != want {
				t.Fatalf("result %+v, want %+v", res, want)
			}
			after := e.count(e.tenant)
			for _, tbl := range tables {
				gone := before[tbl] - after[tbl]
				wantGone := map[string]int{"Runs": 3, "ExecutionAttempts": 3, "Checkpoints": 4, "CallRecords": 4,
					"DecisionRequests": 4, "SubAgentDelegations": 4, "IdempotencyTombstones": -1}[tbl]
				if gone != wantGone {
					t.Errorf("%s: %d rows gone, want %d (before %d, after %d)", tbl, gone, wantGone, before[tbl], after[tbl])
				}
			}
			for _, id := range append(chainA, chainB...) {
				if e.exists(e.tenant, id) {
					t.Errorf("purged run %s still exists", id)
				}
			}
			for _, id := range []uuid.UUID{leased.RunID, rootF[0], contF.RunID, queued.RunID, young[0]} {
				if !e.exists(e.tenant, id) {
					t.Errorf("run %s was purged but must be kept", id)
				}
			}
			for _, cl := range clsA {
				err := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
					_, err := attempts.Get(e.ctx, tx, e.tenant, cl.Attempt.AttemptID)
					return err
				})
				if !apperr.Is(err, api.CodeNotFound) {
					t.Errorf("purged attempt %s: %v", cl.Attempt.AttemptID, err)
				}
			}
			// The purged event's key still answers with the purged run, and makes no run.
			r, created, err := e.svc.Enqueue(e.ctx, c, e.spec("short", key("event-1")))
			if err != nil || created || !r.Purged || r.RunID != chainA[0] || r.State != api.RunEnded {
				t.Fatalf("repeat enqueue of a purged key: created=%v run=%+v err=%v", created, r, err)
			}
			if n := e.count(e.tenant)["Runs"]; n != after["Runs"] {
				t.Fatalf("the repeat enqueue made a run: %d runs, want %d", n, after["Runs"])
			}
			// Nothing is left to purge.
			if again := e.purge(retention.Options{}); again != (retention.Result{}) {
				t.Fatalf("second purge: %+v", again)
			}
		})

		t.Run("EachProjectsRetention", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			// Queued an hour before it ended, so only EndedAt decides at the boundary.
			r := e.enqueue(e.caller, "short")
			e.clock.Advance(time.Hour)
			e.complete(e.caller, e.claim(e.caller, r.RunID))
			short := []uuid.UUID{r.RunID}
			long, _ := e.endedChain(e.caller, "long", 0)
			e.clock.Advance(30 * day) // exactly the retention: not past it
			if res := e.purge(retention.Options{}); res.Chains != 0 {
				t.Fatalf("purged at exactly 30 days: %+v", res)
			}
			e.clock.Advance(time.Millisecond)
			if res := e.purge(retention.Options{}); res.Chains != 1 || e.exists(e.tenant, short[0]) || !e.exists(e.tenant, long[0]) {
				t.Fatalf("past 30 days: %+v; short kept %v, long kept %v", res, e.exists(e.tenant, short[0]), e.exists(e.tenant, long[0]))
			}
			e.clock.Advance(60 * day)
			if res := e.purge(retention.Options{}); res.Chains != 1 || e.exists(e.tenant, long[0]) {
				t.Fatalf("past 90 days: %+v", res)
			}
		})

		t.Run("ParentWaitsForChildChain", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			c := e.caller
			// A parent in the short project delegates to a child in the long one, and a
			// parent in the long project to a child in the short one.
			p1 := e.enqueue(c, "short")
			cl1 := e.claim(c, p1.RunID)
			child1 := e.enqueue(c, "long", parent(p1.RunID))
			e.complete(c, cl1)
			e.complete(c, e.claim(c, child1.RunID))
			p2 := e.enqueue(c, "long")
			cl2 := e.claim(c, p2.RunID)
			child2, _ := e.endedChain(c, "short", 1, parent(p2.RunID)) // a continued child chain
			e.complete(c, cl2)

			e.clock.Advance(31 * day)
			res := e.purge(retention.Options{})
			// p1 is past retention but waits for child1 (long); child2's chain goes, p2 stays.
			if res.Chains != 1 || res.Runs != 2 || res.Deferred != 1 {
				t.Fatalf("at 31 days: %+v", res)
			}
			for id, keep := range map[uuid.UUID]bool{p1.RunID: true, child1.RunID: true, p2.RunID: true, child2[0]: false, child2[1]: false} {
				if e.exists(e.tenant, id) != keep {
					t.Errorf("run %s: exists %v, want %v", id, !keep, keep)
				}
			}
			e.clock.Advance(60 * day)
			res = e.purge(retention.Options{})
			// child1 first, then p1 in a later pass of the same purge; p2 with it.
			if res.Chains != 3 || res.Runs != 3 || res.Deferred != 0 {
				t.Fatalf("at 91 days: %+v", res)
			}
			if n := e.count(e.tenant)["Runs"]; n != 0 {
				t.Fatalf("%d runs left", n)
			}
		})

		t.Run("BoundedBatches", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			for range 5 {
				_, cls := e.endedChain(e.caller, "short", 0)
				e.children(cls[0], 3)
			}
			long, _ := e.endedChain(e.caller, "short", 2) // three runs: more than a batch
			e.clock.Advance(40 * day)
			res := e.purge(retention.Options{BatchRuns: 2, ChunkRows: 2})
			if res.Chains != 6 || res.Runs != 8 || res.Checkpoints != 15 || res.Batches < 4 {
				t.Fatalf("result %+v: want 6 chains, 8 runs, 15 checkpoints in at least 4 batches", res)
			}
			for tbl, n := range e.count(e.tenant) {
				if n != 0 {
					t.Errorf("%s: %d rows left", tbl, n)
				}
			}
			if e.exists(e.tenant, long[2]) {
				t.Fatal("the chain longer than a batch was not purged")
			}
		})

		t.Run("DryRunDeletesNothing", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			e.endedChain(e.caller, "short", 1, key("k1"))
			e.endedChain(e.caller, "short", 0)
			e.clock.Advance(31 * day)
			before := e.count(e.tenant)
			res := e.purge(retention.Options{DryRun: true})
			if res.Chains != 2 || res.Runs != 3 || res.Attempts != 3 || res.Tombstones != 1 || res.Checkpoints != 0 {
				t.Fatalf("dry run: %+v", res)
			}
			if after := e.count(e.tenant); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("dry run changed rows: before %v after %v", before, after)
			}
		})

		t.Run("EveryTenant", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			other := runs.Caller{TenantID: e.newTenant(), KeyID: "k"}
			mine, _ := e.endedChain(e.caller, "short", 0, key("same-key"))
			theirs, _ := e.endedChain(other, "short", 0, key("same-key"))
			keptOther, _ := e.endedChain(other, "long", 0)
			e.clock.Advance(31 * day)
			if res := e.purge(retention.Options{}); res.Chains != 2 || res.Tombstones != 2 {
				t.Fatalf("purge across tenants: %+v", res)
			}
			if e.exists(e.tenant, mine[0]) || e.exists(other.TenantID, theirs[0]) || !e.exists(other.TenantID, keptOther[0]) {
				t.Fatal("a tenant's chain was purged or kept wrongly")
			}
			// Each tenant's tombstone names its own run.
			for _, c := range []struct {
				caller runs.Caller
				run    uuid.UUID
			}{{e.caller, mine[0]}, {other, theirs[0]}} {
				r, created, err := e.svc.Enqueue(e.ctx, c.caller, e.spec("short", key("same-key")))
				if err != nil || created || !r.Purged || r.RunID != c.run {
					t.Fatalf("tenant %s repeat: %+v created=%v err=%v", c.caller.TenantID, r, created, err)
				}
			}
		})
	})
}

func TestRunJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite())
	old, _ := e.endedChain(e.caller, "short", 0)
	e.clock.Advance(31 * day)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		retention.RunJob(ctx, e.db, 10*time.Millisecond, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.exists(e.tenant, old[0]) {
		if time.Now().After(deadline) {
			t.Fatal("the job did not purge the old chain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunJob did not return after its context ended")
	}
}

func ptr[T any](v T) *T { return &v }
