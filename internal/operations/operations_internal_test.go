package operations

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

type world struct {
	t      *testing.T
	ctx    context.Context
	db     *sqldb.DB
	clock  *dbtest.Clock
	tenant string
	runs   *runs.Service
	store  *Store
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), clock: dbtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}
	w.db = dbtest.SQLite().Open(t, dbtest.Options{Clock: w.clock.Now})
	w.tenant = w.newTenant()
	w.runs = runs.NewService(w.db, runs.DefaultConfig(), nil)
	w.store = NewStore(w.db, w.runs)
	return w
}

func (w *world) newTenant() string {
	tenant := dbtest.NewTenant(w.t, w.db)
	if _, _, err := projects.NewStore(w.db).Put(w.ctx, tenant, "p1", projects.Change{}); err != nil {
		w.t.Fatal(err)
	}
	return tenant
}

func (w *world) caller(tenant string) runs.Caller {
	return runs.Caller{TenantID: tenant, KeyID: "admin"}
}

func (w *world) runner(holder string, batch int) *Runner {
	return NewRunner(w.db, w.runs, RunnerConfig{Holder: holder, Batch: batch, Lease: 30 * time.Second})
}

func (w *world) enqueue(tenant string, maxAttempts int, tags ...string) runs.Run {
	w.t.Helper()
	r, _, err := w.runs.Enqueue(w.ctx, w.caller(tenant), runs.Spec{ProjectID: "p1", Subject: "s:" + uuid.NewString()[:8],
		Kind: "eval", AgentID: "a1", StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch,
		MaxAttempts: maxAttempts, MaxCorrections: 3, Tags: tags})
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// claim leases the tenant's only due run.
func (w *world) claim(tenant string) runs.Claimed {
	w.t.Helper()
	cl, err := w.runs.Claim(w.ctx, w.caller(tenant), runs.ClaimRequest{HolderID: "h1", ReleaseID: "rel-1",
		AdapterVersion: "1.0", ModelProfileID: "m"})
	if err != nil {
		w.t.Fatal(err)
	}
	return cl
}

func (w *world) get(tenant string, id uuid.UUID) runs.Run {
	w.t.Helper()
	r, err := w.runs.Get(w.ctx, tenant, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) create(tenant string, req api.BulkRunsRequest) api.Operation {
	w.t.Helper()
	op, created, err := w.store.Create(w.ctx, w.caller(tenant), req)
	if err != nil || !created {
		w.t.Fatalf("create: created=%v %v", created, err)
	}
	return op
}

func (w *world) op(tenant string, id *uuid.UUID) api.Operation {
	w.t.Helper()
	op, err := w.store.Get(w.ctx, tenant, *id)
	if err != nil {
		w.t.Fatal(err)
	}
	return op
}

func (w *world) agree(tenant string) {
	w.t.Helper()
	if n, err := w.runs.TenantDisagreements(w.ctx, tenant); err != nil || n != 0 {
		w.t.Fatalf("disagreements: %d %v", n, err)
	}
}

// A bulk cancel over a filter ends the queued runs, asks the leased one's holder to stop
// (it stays leased), and skips the ended one, saying why; a run outside the filter is not
// touched.
func TestBulkCancelOverFilter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	leased := w.enqueue(w.tenant, 3, "bad")
	w.claim(w.tenant)
	q1, q2 := w.enqueue(w.tenant, 3, "bad"), w.enqueue(w.tenant, 3, "bad")
	ended := w.enqueue(w.tenant, 3, "bad")
	if _, err := w.runs.Cancel(w.ctx, w.tenant, ended.RunID); err != nil {
		t.Fatal(err)
	}
	other := w.enqueue(w.tenant, 3, "good")

	dry, created, err := w.store.Create(w.ctx, w.caller(w.tenant), api.BulkRunsRequest{Action: api.BulkCancel,
		Filter: &api.BulkFilter{Tag: api.Ptr("bad")}, DryRun: true})
	if err != nil || created || dry.OperationID != nil || dry.Matched != 4 || dry.State != api.OperationDryRun {
		t.Fatalf("dry run: %+v created=%v %v", dry, created, err)
	}
	if w.get(w.tenant, q1.RunID).State != api.RunQueued {
		t.Fatal("a dry run acted")
	}
	op := w.create(w.tenant, api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("bad")},
		Reason: api.Ptr("bad release")})
	if op.State != api.OperationRunning || op.Matched != 4 || op.Done != 0 {
		t.Fatalf("created: %+v", op)
	}
	if n, err := w.runner("a", 2).Tick(w.ctx); err != nil || n != 1 {
		t.Fatalf("tick: %d %v", n, err)
	}
	got := w.op(w.tenant, op.OperationID)
	if got.State != api.OperationSucceeded || got.Cancelled != 2 || got.CancelRequested != 1 || got.Skips.Ended != 1 ||
		got.Done != 3 || got.Skipped != 1 || got.FinishedAt == nil {
		t.Fatalf("progress: %+v", got)
	}
	for _, id := range []uuid.UUID{q1.RunID, q2.RunID} {
		if r := w.get(w.tenant, id); r.State != api.RunEnded || r.Outcome == nil || *r.Outcome != api.OutcomeCancelled {
			t.Fatalf("queued run %s: %+v", id, r)
		}
	}
	if r := w.get(w.tenant, leased.RunID); r.State != api.RunLeased || r.CancelRequestedAt == nil {
		t.Fatalf("leased run: state %s, cancel requested %v", r.State, r.CancelRequestedAt)
	}
	if r := w.get(w.tenant, other.RunID); r.State != api.RunQueued {
		t.Fatalf("a run outside the filter: %s", r.State)
	}
	w.agree(w.tenant)
}

// continue continues ended runs through the runs' own continue, and skips a run that has
// spent its attempts (attempts_exhausted) and one that has not ended.
func TestBulkContinueSkipsExhausted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := w.enqueue(w.tenant, 1)
	cl := w.claim(w.tenant)
	if _, err := w.runs.Complete(w.ctx, w.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		runs.Completion{State: api.AttemptFailed}); err != nil {
		t.Fatal(err)
	}
	// Its continuation spends the one attempt left; once it has ended, nothing is left.
	spent, _, err := w.runs.Continue(w.ctx, w.caller(w.tenant), first.RunID, runs.Continuation{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.runs.Cancel(w.ctx, w.tenant, spent.RunID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.runs.Continue(w.ctx, w.caller(w.tenant), spent.RunID, runs.Continuation{}); !apperr.Is(err, api.CodeAttemptsExhausted) {
		t.Fatalf("the runs' own continue: %v", err)
	}
	fresh := w.enqueue(w.tenant, 3)
	if _, err := w.runs.Cancel(w.ctx, w.tenant, fresh.RunID); err != nil {
		t.Fatal(err)
	}
	queued := w.enqueue(w.tenant, 3)
	op := w.create(w.tenant, api.BulkRunsRequest{Action: api.BulkContinue,
		RunIDs: []uuid.UUID{spent.RunID, fresh.RunID, queued.RunID, fresh.RunID}})
	if op.Matched != 3 {
		t.Fatalf("matched %d, want 3 (a repeated id once)", op.Matched)
	}
	if _, err := w.runner("a", 200).Tick(w.ctx); err != nil {
		t.Fatal(err)
	}
	got := w.op(w.tenant, op.OperationID)
	if got.Continued != 1 || got.Skips.AttemptsExhausted != 1 || got.Skips.NotEnded != 1 || got.State != api.OperationSucceeded {
		t.Fatalf("progress: %+v", got)
	}
	if _, created, err := w.runs.Continue(w.ctx, w.caller(w.tenant), fresh.RunID, runs.Continuation{}); err != nil || created {
		t.Fatal(err) // the continuation exists: a repeat answers it
	}
	w.agree(w.tenant)
}

// A replica that dies after its first batch leaves the operation leased; a second runner
// on the same database takes it once the lease has passed and finishes it from the cursor,
// acting on no run twice.
func TestSecondReplicaFinishesAfterHolderDies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, w.enqueue(w.tenant, 3, "bulk").RunID)
	}
	op := w.create(w.tenant, api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("bulk")}})
	died := errors.New("replica a died")
	var holds atomic.Int32
	w.db.SetStatementHook(func(_ context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		if st.Query == sqliteQueries.hold && holds.Add(1) == 2 {
			return died
		}
		return nil
	})
	a, b := w.runner("a", 2), w.runner("b", 2)
	if _, err := a.Tick(w.ctx); !errors.Is(err, died) {
		t.Fatalf("replica a: %v", err)
	}
	w.db.SetStatementHook(nil)
	mid := w.op(w.tenant, op.OperationID)
	if mid.State != api.OperationRunning || mid.Cancelled != 2 {
		t.Fatalf("after the first batch: %+v", mid)
	}
	if n, err := b.Tick(w.ctx); err != nil || n != 0 {
		t.Fatalf("b took a held lease: %d %v", n, err)
	}
	w.clock.Advance(31 * time.Second)
	if n, err := b.Tick(w.ctx); err != nil || n != 1 {
		t.Fatalf("b: %d %v", n, err)
	}
	got := w.op(w.tenant, op.OperationID)
	// A batch done twice would count its runs again, as ended.
	if got.State != api.OperationSucceeded || got.Cancelled != 5 || got.Skipped != 0 || got.Matched != 5 {
		t.Fatalf("progress: %+v", got)
	}
	for _, id := range ids {
		if r := w.get(w.tenant, id); r.State != api.RunEnded {
			t.Fatalf("run %s: %s", id, r.State)
		}
	}
	var results []string
	if err := w.db.Read(w.ctx, sqldb.TenantScope(w.tenant), func(tx *sqldb.Tx) error {
		return tx.SelectContext(w.ctx, &results, `SELECT Result FROM OperationRuns WHERE TenantId = ?1 ORDER BY Seq`, w.tenant)
	}); err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r != resultCancelled {
			t.Fatalf("run %d: %q", i+1, r)
		}
	}
	w.agree(w.tenant)
}

// An exact repeat returns the same operation; an idempotency key with another body is
// refused; a request that names neither runIds nor filter is invalid.
func TestExactRepeatReturnsSameOperation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.enqueue(w.tenant, 3, "x")
	req := api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("x")}}
	first := w.create(w.tenant, req)
	again, created, err := w.store.Create(w.ctx, w.caller(w.tenant), req)
	if err != nil || created || *again.OperationID != *first.OperationID {
		t.Fatalf("repeat: %+v created=%v %v", again, created, err)
	}
	keyed := req
	keyed.IdempotencyKey = api.Ptr("k-1")
	k1 := w.create(w.tenant, keyed)
	if *k1.OperationID == *first.OperationID {
		t.Fatal("a keyed request answered with the unkeyed operation")
	}
	if again, _, err := w.store.Create(w.ctx, w.caller(w.tenant), keyed); err != nil || *again.OperationID != *k1.OperationID {
		t.Fatalf("keyed repeat: %v", err)
	}
	other := keyed
	other.Action = api.BulkContinue
	if _, _, err := w.store.Create(w.ctx, w.caller(w.tenant), other); !apperr.Is(err, api.CodeIdempotencyKeyReused) {
		t.Fatalf("key reused: %v", err)
	}
	if _, _, err := w.store.Create(w.ctx, w.caller(w.tenant), api.BulkRunsRequest{Action: api.BulkCancel}); !apperr.Is(err, api.CodeInvalidRequest) {
		t.Fatalf("neither: %v", err)
	}
}

// Nothing of another tenant is matched: not by a filter, not by its run ids, and its
// operations are not found.
func TestOtherTenantNeverMatched(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	other := w.newTenant()
	theirs := w.enqueue(other, 3, "shared")
	mine := w.enqueue(w.tenant, 3, "shared")
	byFilter := w.create(w.tenant, api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("shared")}})
	if byFilter.Matched != 1 {
		t.Fatalf("matched %d", byFilter.Matched)
	}
	byID := w.create(w.tenant, api.BulkRunsRequest{Action: api.BulkCancel, RunIDs: []uuid.UUID{theirs.RunID}})
	if _, err := w.runner("a", 200).Tick(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.op(w.tenant, byID.OperationID); got.Skips.NotFound != 1 || got.Done != 0 {
		t.Fatalf("by id: %+v", got)
	}
	if got := w.op(w.tenant, byFilter.OperationID); got.Cancelled != 1 {
		t.Fatalf("by filter: %+v", got)
	}
	if r := w.get(other, theirs.RunID); r.State != api.RunQueued {
		t.Fatalf("the other tenant's run: %s", r.State)
	}
	if r := w.get(w.tenant, mine.RunID); r.State != api.RunEnded {
		t.Fatalf("mine: %s", r.State)
	}
	if _, err := w.store.Get(w.ctx, other, *byFilter.OperationID); !apperr.Is(err, api.CodeNotFound) {
		t.Fatalf("another tenant read the operation: %v", err)
	}
}

// More matching runs than the bound is bulk_too_large, and nothing is stored.
func TestTooManyMatchedIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.store.maxMatched = 2
	for range 3 {
		w.enqueue(w.tenant, 3, "many")
	}
	req := api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("many")}}
	if _, _, err := w.store.Create(w.ctx, w.caller(w.tenant), req); !apperr.Is(err, api.CodeBulkTooLarge) {
		t.Fatalf("3 runs over a bound of 2: %v", err)
	}
	w.store.maxMatched = 3
	if op := w.create(w.tenant, req); op.Matched != 3 {
		t.Fatalf("at the bound: %+v", op)
	}
}

// The same request without an idempotencyKey is a repeat while it is a retry's distance
// from the first (within repeatWindow it finds the first's operation); asked for again
// later it is a new operation over what matches then. Before, a cancel of the same filter
// a day later answered the old operation and cancelled nothing.
func TestSameBodyLaterIsANewOperation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.enqueue(w.tenant, 3, "nightly")
	req := api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{Tag: api.Ptr("nightly"), State: api.Ptr(api.RunQueued)}}
	first := w.create(w.tenant, req)
	for _, d := range []time.Duration{time.Second, 4 * time.Minute, 5 * time.Minute} {
		w.clock.Advance(d)
		again, created, err := w.store.Create(w.ctx, w.caller(w.tenant), req)
		if err != nil || created || *again.OperationID != *first.OperationID {
			t.Fatalf("a repeat %v after the first: %+v created=%v %v", d, again, created, err)
		}
	}
	if _, err := w.runner("r1", 100).Tick(w.ctx); err != nil {
		t.Fatal(err)
	}
	late := w.enqueue(w.tenant, 3, "nightly")
	w.clock.Advance(25 * time.Minute)
	next, created, err := w.store.Create(w.ctx, w.caller(w.tenant), req)
	if err != nil || !created || *next.OperationID == *first.OperationID || next.Matched != 1 {
		t.Fatalf("the same request 35 min later: %+v created=%v %v", next, created, err)
	}
	if _, err := w.runner("r1", 100).Tick(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.get(w.tenant, late.RunID); got.State != api.RunEnded {
		t.Fatalf("the run queued since is %v", got.State)
	}
	// A keyed request is its key's, whenever it comes.
	keyed := req
	keyed.IdempotencyKey = api.Ptr("weekly-1")
	k := w.create(w.tenant, keyed)
	w.clock.Advance(48 * time.Hour)
	if again, created, err := w.store.Create(w.ctx, w.caller(w.tenant), keyed); err != nil || created || *again.OperationID != *k.OperationID {
		t.Fatalf("a keyed repeat two days later: %+v created=%v %v", again, created, err)
	}
}
