package runs

// Fault injection: SQLite has one writer, so the paths SQL Server takes when two
// transactions collide never run there by themselves. The statement hook (sqldb) makes
// them run: just before the statement that would collide, it writes what the concurrent
// winner would have committed, in the same transaction. Each case checks that the API
// answers exactly as it promises (200 repeat, 409 with its code, or a retry that leases
// something else), never a 500, and that the invariants hold afterwards.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

type faultEnv struct {
	t      *testing.T
	db     *sqldb.DB
	svc    *Service
	clock  *dbtest.Clock
	tenant string
	caller Caller
	ctx    context.Context
}

func newFaultEnv(t *testing.T, tgt dbtest.Target) *faultEnv {
	t.Helper()
	clock := dbtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	e := &faultEnv{t: t, db: db, svc: NewService(db, DefaultConfig(), nil), clock: clock, ctx: context.Background()}
	e.tenant = dbtest.NewTenant(t, db)
	e.caller = Caller{TenantID: e.tenant, KeyID: "k"}
	if _, _, err := projects.NewStore(db).Put(e.ctx, e.tenant, "p1", projects.Change{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// before makes fn run once, inside the transaction, just before the first statement whose
// text is query and whose arguments match; it reports whether it ran.
func (e *faultEnv) before(query string, match func(args []any) bool, fn func(ctx context.Context, tx *sqldb.Tx) error) *atomic.Bool {
	var ran atomic.Bool
	e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if st.Query != query || (match != nil && !match(st.Args)) || ran.Load() {
			return nil
		}
		ran.Store(true)
		return fn(ctx, tx)
	})
	e.t.Cleanup(func() { e.db.SetStatementHook(nil) })
	return &ran
}

func (e *faultEnv) spec(subject string) Spec {
	return Spec{ProjectID: "p1", Subject: subject, Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(),
		Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}
}

func (e *faultEnv) enqueue(s Spec) Run {
	e.t.Helper()
	r, _, err := e.svc.Enqueue(e.ctx, e.caller, s)
	if err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	return r
}

func (e *faultEnv) claim() Claimed {
	e.t.Helper()
	cl, err := e.svc.Claim(e.ctx, e.caller, ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	return cl
}

func (e *faultEnv) agree() {
	e.t.Helper()
	if n, err := e.svc.TenantDisagreements(e.ctx, e.tenant); err != nil || n != 0 {
		e.t.Fatalf("%d disagreements (%v)", n, err)
	}
}

func wantRan(t *testing.T, ran *atomic.Bool) {
	t.Helper()
	if !ran.Load() {
		t.Fatal("the injected write never ran: the case did not reach the statement")
	}
}

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range faultCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newFaultEnv(t, tgt))
			})
		}
	})
}

var faultCases = []struct {
	name string
	run  func(t *testing.T, e *faultEnv)
}{
	{"EnqueueLosesItsKeyToAConcurrentEnqueue", func(t *testing.T, e *faultEnv) {
		key := "event-1"
		s := e.spec("s")
		s.IdempotencyKey = &key
		var winner Run
		ran := e.before(e.svc.q.insert, nil, func(ctx context.Context, tx *sqldb.Tx) error {
			var err error
			winner, _, err = e.svc.EnqueueTx(ctx, tx, e.caller, s) // the same request, committed first
			return err
		})
		got, created, err := e.svc.Enqueue(e.ctx, e.caller, s)
		wantRan(t, ran)
		if err != nil || created || got.RunID != winner.RunID {
			t.Fatalf("lost the key to an identical request: created=%v err=%v run %v, want the winner %v", created, err, got.RunID, winner.RunID)
		}
		// The winner made another request with this key: the loser is refused.
		key2 := "event-2"
		s2, other := e.spec("s2"), e.spec("s")
		s2.IdempotencyKey, other.IdempotencyKey = &key2, &key2
		ran = e.before(e.svc.q.insert, nil, func(ctx context.Context, tx *sqldb.Tx) error {
			_, _, err := e.svc.EnqueueTx(ctx, tx, e.caller, s2)
			return err
		})
		_, _, err = e.svc.Enqueue(e.ctx, e.caller, other)
		wantRan(t, ran)
		if !apperr.Is(err, api.CodeIdempotencyKeyReused) {
			t.Fatalf("lost the key to another request: got %v, want idempotency_key_reused", err)
		}
		e.agree()
	}},
	{"ContinueLosesToAConcurrentContinue", func(t *testing.T, e *faultEnv) {
		old := e.enqueue(e.spec("s"))
		cl := e.claim()
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, Completion{State: api.AttemptFailed}); err != nil {
			t.Fatal(err)
		}
		winner := ids.New()
		insert := e.svc.q.insertKeyless // a continuation has no idempotency key
		if insert == "" {
			insert = e.svc.q.insert
		}
		ran := e.before(insert, func(args []any) bool { return args[21] == old.RunID }, func(ctx context.Context, tx *sqldb.Tx) error {
			now, _ := tx.Now(ctx)
			_, err := tx.ExecContext(ctx, e.svc.q.insert, insertArgs(tx.Dialect, Run{RunID: winner, TenantID: e.tenant,
				ProjectID: old.ProjectID, Subject: old.Subject, Kind: old.Kind, AgentID: old.AgentID, StepID: old.StepID,
				SnapshotID: old.SnapshotID, Band: old.Band, Epoch: 1, Attempt: 1, MaxAttempts: old.MaxAttempts,
				MaxCorrections: old.MaxCorrections, QueuedAt: now, DueAt: now,
				ContinuedFromRunID: uuid.NullUUID{UUID: old.RunID, Valid: true}, CreatedBy: "k"}, nil)...)
			if err == nil {
				_, err = e.svc.syncHead(ctx, tx, e.tenant, old.Subject)
			}
			return err
		})
		got, created, err := e.svc.Continue(e.ctx, e.caller, old.RunID, Continuation{})
		wantRan(t, ran)
		if err != nil || created || got.RunID != winner {
			t.Fatalf("lost the continuation: created=%v err=%v run %v, want the winner %v", created, err, got.RunID, winner)
		}
		e.agree()
	}},
	{"ClaimSkipsAHeadWhoseSubjectWasLeased", func(t *testing.T, e *faultEnv) {
		head := e.enqueue(e.spec("s"))
		second := e.enqueue(e.spec("s"))
		other := e.enqueue(e.spec("t"))
		// A concurrent claim leased the subject's second run (only possible if a marker were
		// wrong; the leased-subject index is the backstop): the lease of the head meets
		// UX_Runs_LeasedSubject, and the claim takes the next candidate.
		ran := e.before(e.svc.leaseStatement(), func(args []any) bool { return args[1] == head.RunID }, func(ctx context.Context, tx *sqldb.Tx) error {
			now, _ := tx.Now(ctx)
			r, err := e.svc.getBy(ctx, tx, e.svc.q.get, e.tenant, second.RunID)
			if err != nil {
				return err
			}
			stamp := ""
			if tx.Dialect.Name() == "sqlite" {
				stamp = ", Version = " + sqliteStamp
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE Runs SET State = 1, Epoch = Epoch + 1, HolderId = 'rival',
				LeasedUntil = ?, SubjectHead = 0`+stamp+` WHERE RunId = ?`), tx.Dialect.Time(now.Add(time.Minute)), second.RunID); err != nil {
				return err
			}
			r.Epoch++
			if err := e.svc.countLease(ctx, tx, r, +1); err != nil {
				return err
			}
			_, err = attempts.Insert(ctx, tx, attempts.Attempt{AttemptID: ids.New(), RunID: r.RunID, StepID: r.StepID,
				TenantID: e.tenant, ProjectID: r.ProjectID, LeaseID: ids.New(), FencingToken: r.Epoch, SnapshotID: r.SnapshotID,
				ReleaseID: "r", AdapterVersion: "1", AgentID: r.AgentID, ModelProfileID: "m", MaxCorrections: 3, StartedAt: now})
			return err
		})
		cl := e.claim()
		wantRan(t, ran)
		if cl.Run.RunID != other.RunID {
			t.Fatalf("claimed %s, want the next candidate %s", cl.Run.Subject, other.Subject)
		}
		if got := e.get(t, head.RunID); got.State != api.RunQueued {
			t.Fatalf("the refused head is %s, want queued", got.State)
		}
		e.agree() // the claim re-marked the subject: its head is gone while the rival holds it
	}},
	{"ClaimNeverAnswersAStaleVersion", func(t *testing.T, e *faultEnv) {
		head := e.enqueue(e.spec("s"))
		other := e.enqueue(e.spec("t"))
		// Another run is written between the claim's pick and its lease, leaving the pick
		// leasable. Where the candidate answered the run and the stamp (leaseUnanswered), that
		// stamp is no longer the next: the claim must fail and change nothing rather than
		// answer a version the row does not have; where the lease answers the row, it answers
		// the row as stored.
		ran := e.before(e.svc.leaseStatement(), func(args []any) bool { return args[1] == head.RunID }, func(ctx context.Context, tx *sqldb.Tx) error {
			return dueEarlier(ctx, tx, other)
		})
		cl, err := e.svc.Claim(e.ctx, e.caller, ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
		wantRan(t, ran)
		if e.svc.q.lease == "" {
			if !errors.Is(err, sqldb.ErrRefused) {
				t.Fatalf("claim after a write under its pick: version %d, %v; want the triggers' refusal", cl.Run.Version, err)
			}
			if got := e.get(t, head.RunID); got.State != api.RunQueued || got.Version != head.Version {
				t.Fatalf("the refused claim changed its pick: %+v", got)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			if got := e.get(t, head.RunID); got.Version != cl.Run.Version {
				t.Fatalf("claim answered version %d, the row has %d", cl.Run.Version, got.Version)
			}
		}
		e.agree()
	}},
	{"EndNeverAnswersAStaleVersion", func(t *testing.T, e *faultEnv) {
		e.enqueue(e.spec("s"))
		other := e.enqueue(e.spec("t"))
		cl := e.claim()
		// Another run is written between a complete's fence and its end. Where the fence read
		// the stamp (fenceWhole, attempts.EndWhole), that stamp is no longer the next: the
		// complete must fail and change nothing rather than answer a version the attempt
		// does not have; elsewhere the end answers the row as stored.
		var ran atomic.Bool
		e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if !strings.HasPrefix(st.Query, "UPDATE ExecutionAttempts SET State = ?2") && !strings.HasPrefix(st.Query, "UPDATE OR FAIL ExecutionAttempts SET State = ?2") &&
				!strings.HasPrefix(st.Query, "UPDATE dbo.ExecutionAttempts SET State = @p2") {
				return nil
			}
			if ran.Swap(true) {
				return nil
			}
			return dueEarlier(ctx, tx, other)
		})
		t.Cleanup(func() { e.db.SetStatementHook(nil) })
		a, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, Completion{State: api.AttemptSucceeded})
		wantRan(t, &ran)
		var stored attempts.Attempt
		if rerr := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
			var err error
			stored, err = attempts.Get(e.ctx, tx, e.tenant, cl.Attempt.AttemptID)
			return err
		}); rerr != nil {
			t.Fatal(rerr)
		}
		if tx := e.db.Dialect; tx.Name() == "sqlite" {
			if !errors.Is(err, sqldb.ErrRefused) {
				t.Fatalf("complete after a write under its fence: version %d, %v; want the triggers' refusal", a.Version, err)
			}
			if stored.State != api.AttemptRunning || stored.Version != cl.Attempt.Version {
				t.Fatalf("the refused complete changed the attempt: %+v", stored)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			if stored.Version != a.Version {
				t.Fatalf("complete answered version %d, the row has %d", a.Version, stored.Version)
			}
		}
		e.agree()
	}},
	{"ClaimAttemptNeverAnswersAStaleVersion", func(t *testing.T, e *faultEnv) {
		head := e.enqueue(e.spec("s"))
		other := e.enqueue(e.spec("t"))
		// Another run is written between the claim's lease and its attempt's insert. Where
		// the insert takes the stamp after the lease's (attempts.InsertStamped), that stamp
		// is no longer the next: the claim must fail and change nothing rather than answer a
		// version the attempt does not have; where the insert answers its version, it answers
		// the row as stored.
		var ran atomic.Bool
		e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if !strings.HasPrefix(st.Query, "INSERT INTO ExecutionAttempts") && !strings.HasPrefix(st.Query, "INSERT INTO dbo.ExecutionAttempts") {
				return nil
			}
			if ran.Swap(true) {
				return nil
			}
			return dueEarlier(ctx, tx, other)
		})
		t.Cleanup(func() { e.db.SetStatementHook(nil) })
		cl, err := e.svc.Claim(e.ctx, e.caller, ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
		wantRan(t, &ran)
		if e.svc.q.lease == "" {
			if !errors.Is(err, sqldb.ErrRefused) {
				t.Fatalf("claim after a write under its lease: attempt version %d, %v; want the triggers' refusal", cl.Attempt.Version, err)
			}
			if got := e.get(t, head.RunID); got.State != api.RunQueued || got.Version != head.Version {
				t.Fatalf("the refused claim changed its pick: %+v", got)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			var stored attempts.Attempt
			if rerr := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
				var err error
				stored, err = attempts.Get(e.ctx, tx, e.tenant, cl.Attempt.AttemptID)
				return err
			}); rerr != nil {
				t.Fatal(rerr)
			}
			if stored.Version != cl.Attempt.Version {
				t.Fatalf("claim answered attempt version %d, the row has %d", cl.Attempt.Version, stored.Version)
			}
		}
		e.agree()
	}},
	{"EndNeverMissesARunQueuedUnderIt", func(t *testing.T, e *faultEnv) {
		e.enqueue(e.spec("s"))
		cl := e.claim()
		// A run of the subject is queued between a complete's fence and the run's end. Where
		// the fence read whether one was (fenceWhole, endLeasedUnanswered), that answer is
		// stale: the complete must fail and change nothing rather than leave the new run's
		// head unmarked; where the end probes for itself, the new run becomes the head.
		var queued Run
		ran := e.before(e.svc.leaveStatement(), nil, func(ctx context.Context, tx *sqldb.Tx) error {
			var err error
			queued, _, err = e.svc.EnqueueTx(ctx, tx, e.caller, e.spec("s"))
			return err
		})
		_, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, Completion{State: api.AttemptSucceeded})
		wantRan(t, ran)
		if e.svc.q.endLeasedUnanswered != "" {
			if !errors.Is(err, sqldb.ErrRefused) {
				t.Fatalf("complete after a run of its subject was queued under it: %v; want the triggers' refusal", err)
			}
			if got := e.get(t, cl.Run.RunID); got.State != api.RunLeased {
				t.Fatalf("the refused complete changed the run: %+v", got)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			if got := e.get(t, queued.RunID); got.State != api.RunQueued {
				t.Fatalf("the run queued under the complete: %+v", got)
			}
		}
		e.agree() // the head markers among them
	}},
	{"ClaimSkipsAHeadEndedWhileItWaited", func(t *testing.T, e *faultEnv) {
		head := e.enqueue(e.spec("s"))
		second := e.enqueue(e.spec("s"))
		// A cancel ended the pick while the claim waited for the subject lock (SQL Server):
		// the lease finds no queued head and the claim seeks again; the subject's next run
		// is its head by then.
		ran := e.before(e.svc.leaseStatement(), func(args []any) bool { return args[1] == head.RunID }, func(ctx context.Context, tx *sqldb.Tx) error {
			now, _ := tx.Now(ctx)
			if _, err := e.svc.getBy(ctx, tx, e.svc.q.endQueued, head.RunID, api.OutcomeCancelled, tx.Dialect.Time(now), nil, nil); err != nil {
				return err
			}
			_, err := e.svc.syncHead(ctx, tx, e.tenant, "s")
			return err
		})
		cl := e.claim()
		wantRan(t, ran)
		if cl.Run.RunID != second.RunID {
			t.Fatalf("claimed %v, want the subject's next run %v", cl.Run.RunID, second.RunID)
		}
		if got := e.get(t, head.RunID); got.State != api.RunEnded || *got.Outcome != api.OutcomeCancelled {
			t.Fatalf("the cancelled head: %+v", got)
		}
		e.agree()
	}},
	{"CompleteRepeatThatWaitedOnTheFence", func(t *testing.T, e *faultEnv) {
		e.enqueue(e.spec("s"))
		e.enqueue(e.spec("s"))
		cl := e.claim()
		hash := "outcome"
		done := Completion{State: api.AttemptSucceeded, OutcomeHash: &hash}
		// The first completion commits while the repeat waits on the fence's locks: the
		// repeat's fence then finds the attempt ended, and the exact-repeat rule answers.
		var first attempts.Attempt
		ran := e.before(e.svc.q.fenceWhole, nil, func(ctx context.Context, tx *sqldb.Tx) error {
			f, err := e.svc.Fence(ctx, tx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken)
			if err != nil {
				return err
			}
			if first, err = e.svc.endAttempt(ctx, tx, f, done.State, done.OutcomeHash, nil); err != nil {
				return err
			}
			_, err = e.svc.leaveLease(ctx, tx, f.Run, leaving{Outcome: api.OutcomeSucceeded, At: f.Now, Spent: f.Run.Attempt})
			return err
		})
		got, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, done)
		wantRan(t, ran)
		if err != nil || got.Version != first.Version || got.State != api.AttemptSucceeded {
			t.Fatalf("repeat after a concurrent completion: %+v %v, want the first answer", got, err)
		}
		e.agree()
		// The same for a release repeat, and a different write is refused.
		cl = e.claim()
		ran = e.before(e.svc.q.fenceWhole, nil, func(ctx context.Context, tx *sqldb.Tx) error {
			f, err := e.svc.Fence(ctx, tx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken)
			if err != nil {
				return err
			}
			if _, err = e.svc.endAttempt(ctx, tx, f, api.AttemptReleased, nil, nil); err != nil {
				return err
			}
			err = e.svc.giveBack(ctx, tx, f.Run, f.Run.Attempt, f.Now, nil, nil, nil, nil)
			return err
		})
		a, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, Release{})
		wantRan(t, ran)
		if err != nil || a.State != api.AttemptReleased {
			t.Fatalf("release repeat after a concurrent release: %+v %v", a, err)
		}
		if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, done); !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("complete after the release: got %v, want attempt_ended", err)
		}
		e.agree()
	}},
	{"HeadSyncSeesWhatHappenedBeforeIt", func(t *testing.T, e *faultEnv) {
		// The interleaving of the brief: an enqueue while the subject's leased run ends. On
		// SQL Server the subject lock orders them; here the end is forced in just before the
		// enqueue's marker statement, so the marker must come out right from whatever the
		// subject looks like when it is computed.
		e.enqueue(e.spec("s"))
		cl := e.claim()
		ran := e.before(e.svc.q.syncHead, nil, func(ctx context.Context, tx *sqldb.Tx) error {
			f, err := e.svc.Fence(ctx, tx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken)
			if err != nil {
				return err
			}
			if _, err := e.svc.endAttempt(ctx, tx, f, api.AttemptSucceeded, nil, nil); err != nil {
				return err
			}
			var out struct {
				Run
				SubjectQueued bool `db:"SubjectQueued"`
			}
			out.Run = f.Run // the statement answers only what the fence did not read (leaveLease)
			if err := tx.GetContext(ctx, &out, e.svc.q.endLeased, f.Run.RunID, f.Run.Epoch, api.OutcomeSucceeded,
				tx.Dialect.Time(f.Now), f.Run.Attempt, nil, nil, nil); err != nil {
				return err
			}
			return e.svc.countLease(ctx, tx, out.Run, -1) // no marker statement of its own
		})
		r := e.enqueue(e.spec("s"))
		wantRan(t, ran)
		e.agree()
		if cl := e.claim(); cl.Run.RunID != r.RunID {
			t.Fatalf("claimed %v, want the new head %v", cl.Run.RunID, r.RunID)
		}
	}},
}

func (e *faultEnv) get(t *testing.T, id uuid.UUID) Run {
	t.Helper()
	r, err := e.svc.Get(e.ctx, e.tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leaseStatement is the claim's lease on the dialect under test (queries.lease, or
// leaseUnanswered where the candidate answers the run).
func (s *Service) leaseStatement() string {
	if s.q.lease != "" {
		return s.q.lease
	}
	return s.q.leaseUnanswered
}

// leaveStatement is a complete's end of its run on the dialect under test (queries.endLeased,
// or endLeasedUnanswered where the fence reads what it answered).
func (s *Service) leaveStatement() string {
	if s.q.endLeasedUnanswered != "" {
		return s.q.endLeasedUnanswered
	}
	return s.q.endLeased
}

// dueEarlier makes a queued run due a minute earlier, a write the run guard allows, which
// takes the next version stamp (SQLite's stamp by the statement, SQL Server's rowversion by
// itself): a write between a statement's read of the stamp and its own.
func dueEarlier(ctx context.Context, tx *sqldb.Tx, run Run) error {
	stamp := ""
	if tx.Dialect.Name() == "sqlite" {
		stamp = ", Version = " + sqliteStamp
	}
	_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE Runs SET DueAt = ?`+stamp+` WHERE RunId = ?`),
		tx.Dialect.Time(run.DueAt.Add(-time.Minute)), run.RunID)
	return err
}
