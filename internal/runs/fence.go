package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Fenced is a holder's write admitted by the fence: the attempt and run rows, both locked
// until the transaction ends, and the transaction's time. A refusal returns them too (as
// read under the same locks), for the exact-repeat check.
type Fenced struct {
	// Attempt holds the attempt's columns the fence judges and the writes use, and only
	// those (attempts.FenceColumns): AttemptID, RunID, TenantID, ProjectID, FencingToken,
	// State, Phase, CorrectionCount, MaxCorrections, OutcomeHash and CancellationObservedAt
	// (attempts.Get reads the rest; attempts.EndFenced the rest an end answers).
	Attempt attempts.Attempt
	// Run holds the columns of the run that a lease's writes use, and only those:
	// RunID, TenantID, ProjectID, Subject, State, Epoch, LeaseSeconds, LeasedUntil,
	// Attempt, MaxAttempts, DeadlineAt and CancelRequestedAt. (Scanning whole rows was most
	// of the fence's cost: the statement itself is two key seeks.)
	Run Run
	Now time.Time
	// Stamp is the stamp the transaction's first write takes, read by a fenceWhole where the
	// dialect can (0: not read); Attempt then holds every column (attempts.EndWhole).
	Stamp sqldb.RowVersion
	// SubjectQueued, read by a fenceWhole where the dialect can (nil: not read), says another
	// run of the subject is queued; Run then also holds its left columns (Kind, AgentID,
	// ParentRunID, ContinuedFromRunID), so the run's leaving answers nothing (leaveLease).
	SubjectQueued *bool
}

// fenceRow is what the fence statement reads: the attempt's columns and the run's, the
// latter named run.<column>.
type fenceRow struct {
	attempts.Attempt
	Run Run `db:"run"`
	// Now is the database clock read by the same statement (NULL where the dialect reads
	// none), so the fence needs no statement of its own for the time.
	Now sqldb.NullTime `db:"Now"`
	// Stamp and SubjectQueued: see Fenced.
	Stamp         sqldb.RowVersion `db:"Stamp"`
	SubjectQueued *bool            `db:"SubjectQueued"`
}

// fillRun sets the run's RunId, TenantId and ProjectId where the statement did not read them
// (SQLite's fences): the attempt's, which the fence's join and WHERE make the run's, and
// ProjectId the claim's copy of the run's (immutable on both).
func (row *fenceRow) fillRun() {
	if row.Run.RunID == uuid.Nil {
		row.Run.RunID, row.Run.TenantID, row.Run.ProjectID = row.Attempt.RunID, row.Attempt.TenantID, row.Attempt.ProjectID
	}
}

// Fence admits a holder's write inside tx, or refuses it. In one statement it reads the
// attempt and its run and locks both until the transaction ends, the attempt first (the
// lock order of every writer of both). It then checks, in this order:
//   - the token is the run's current epoch, else StaleLease;
//   - the attempt is the run's current one (a current-epoch token presented on an older
//     attempt), else StaleLease saying so;
//   - the attempt is running, else AttemptEnded (completed, released, lost, cancelled);
//   - the run is leased and its lease has not passed, else LeaseExpired.
//
// Errors: NotFound (no such attempt for this tenant), and the refusals above, which come
// with the Fenced rows as read.
func (s *Service) Fence(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, token int64) (Fenced, error) {
	return s.fence(ctx, tx, s.q.fence, tenantID, attemptID, token)
}

// fence is Fence with its statement: queries.fence or fenceWhole.
func (s *Service) fence(ctx context.Context, tx *sqldb.Tx, query, tenantID string, attemptID uuid.UUID, token int64) (Fenced, error) {
	var row fenceRow
	err := tx.GetContext(ctx, &row, query, tenantID, attemptID)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Fenced{}, apperr.New(api.CodeNotFound, "no attempt %s", attemptID)
	}
	if err != nil {
		return Fenced{}, fmt.Errorf("fence: %w", err)
	}
	if row.Now.Valid {
		tx.SeedNow(row.Now.Time)
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Fenced{}, err
	}
	row.fillRun()
	f := Fenced{Attempt: row.Attempt, Run: row.Run, Now: now, Stamp: row.Stamp, SubjectQueued: row.SubjectQueued}
	return f, judge(f, token)
}

// judge is the fence's rule on the rows it read.
func judge(f Fenced, token int64) error {
	a, r := f.Attempt, f.Run
	switch {
	case token != r.Epoch:
		return apperr.New(api.CodeStaleLease, "fencing token %d is not the run's current epoch", token)
	case token != a.FencingToken:
		return apperr.New(api.CodeStaleLease,
			"attempt %s is not the run's current attempt: fencing token %d belongs to a later attempt", a.AttemptID, token)
	case a.State != api.AttemptRunning:
		return apperr.New(api.CodeAttemptEnded, "attempt %s has ended (%s)", a.AttemptID, a.State)
	case r.State != api.RunLeased || r.LeasedUntil == nil || !f.Now.Before(*r.LeasedUntil):
		return apperr.New(api.CodeLeaseExpired, "the lease at fencing token %d has passed", token)
	}
	return nil
}

// refused reports whether err is the fence's refusal (not a missing attempt or a failure).
func refused(err error) bool {
	switch apperr.CodeOf(err) {
	case api.CodeStaleLease, api.CodeAttemptEnded, api.CodeLeaseExpired:
		return true
	}
	return false
}

// ErrNoRepeat is what a FencedWrite's Repeat answers when nothing of its write is stored.
var ErrNoRepeat = errors.New("no earlier write to repeat")

// ErrTaken is what a FencedWrite's Do answers when the store refused the write as a
// duplicate (its unique index): an earlier write holds its place, and Repeat decides.
var ErrTaken = errors.New("the write's place is taken")

// FencedWrite is one kind of holder write under the fence, with its exact-repeat rule.
type FencedWrite[T any] struct {
	// What names the write in errors ("append checkpoint").
	What string
	// EndsFirst: Do's first write is the attempt's end (endAttempt), so the fence may read
	// the whole attempt and the stamp that write takes (fenceWhole). Nothing may write
	// between the fence and that end.
	EndsFirst bool
	// Do makes the write, under the admitted fence, and reports whether it wrote (false
	// when it found the write made already and answered it itself, as a delegation does when
	// its child's idempotency key names the child). It answers ErrTaken (wrapped or not) when
	// the store refuses the write as a duplicate.
	Do func(ctx context.Context, tx *sqldb.Tx, f Fenced) (T, bool, error)
	// Repeat reads what an earlier, identical write stored and answers it as that write
	// did; ErrNoRepeat when nothing of it is stored; another error (SequenceConflict, …)
	// when a different write holds its place. Nil: the write has no repeats (a heartbeat).
	Repeat func(ctx context.Context, tx *sqldb.Tx, f Fenced) (T, error)
}

// WriteFenced runs a holder's write in one transaction: the fence (one statement), then,
// when it admits, the write. It is the one place that says what an exact repeat is:
//
//   - The write is tried first: no read looks for an earlier one on the common path.
//   - When the store refuses it as a duplicate (Do answers ErrTaken), Repeat answers: the
//     stored result of an identical write (created=false), or its conflict.
//   - When the fence refuses (the lease passed or was given back, the attempt ended, a
//     stale token), an exact repeat of a write that already succeeded under this very
//     token still answers as the first did (created=false): a retry after the first
//     write ended the lease, or a concurrent repeat that waited on the fence's locks while
//     the first completed. Anything else, including a repeat presented with another token,
//     gets the fence's refusal.
//
// Nothing of a refused write is kept: every error rolls the transaction back.
func WriteFenced[T any](ctx context.Context, s *Service, tenantID string, attemptID uuid.UUID, token int64, w FencedWrite[T]) (T, bool, error) {
	var (
		out     T
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var zero T
		out, created = zero, false
		query := s.q.fence
		if w.EndsFirst {
			query = s.q.fenceWhole
		}
		f, err := s.fence(ctx, tx, query, tenantID, attemptID, token)
		if err != nil {
			if !refused(err) || w.Repeat == nil || f.Attempt.FencingToken != token {
				return err
			}
			v, rerr := w.Repeat(ctx, tx, f)
			if rerr != nil {
				// Not an exact repeat (or not of this token): the fence's answer stands.
				return err
			}
			out = v
			return nil
		}
		v, wrote, err := w.Do(ctx, tx, f)
		if errors.Is(err, ErrTaken) && w.Repeat != nil {
			v, err = w.Repeat(ctx, tx, f)
			if errors.Is(err, ErrNoRepeat) {
				return fmt.Errorf("refused as a duplicate, yet nothing is stored: %w", err)
			}
			if err != nil {
				return err
			}
			out = v
			return nil
		}
		if err != nil {
			return err
		}
		out, created = v, wrote
		return nil
	})
	if err != nil {
		var zero T
		return zero, false, fmt.Errorf("%s: %w", w.What, err)
	}
	return out, created, nil
}

// Heartbeat is the answer to a renewal.
type Heartbeat struct {
	LeasedUntil     time.Time
	CancelRequested bool
	// BudgetHeld: the run's project reached its daily cost budget (new claims are held).
	BudgetHeld bool
}

// Heartbeat renews the lease for leaseSeconds (0: the length stored at claim) and tells
// the holder whether a cancel is pending and whether its project's cost budget holds new
// claims. Three statements: the fence, the renewal and the budget probe.
func (s *Service) Heartbeat(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, leaseSeconds int) (Heartbeat, error) {
	hb, _, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[Heartbeat]{
		What: "heartbeat",
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (Heartbeat, bool, error) {
			secs := leaseSeconds
			if secs <= 0 && f.Run.LeaseSeconds != nil {
				secs = *f.Run.LeaseSeconds
			}
			if secs <= 0 {
				secs = int(s.cfg.LeaseTTL / time.Second)
			}
			until := f.Now.Add(time.Duration(secs) * time.Second)
			if err := s.exec1(ctx, tx, "renew lease", s.q.heartbeat, f.Run.RunID, f.Run.Epoch, tx.Dialect.Time(until), secs); err != nil {
				return Heartbeat{}, false, err
			}
			var held int
			err := tx.GetContext(ctx, &held, s.q.budgetHeld, tenantID, f.Run.ProjectID, f.Now.UTC().Format(time.DateOnly))
			if err != nil && !errors.Is(err, sqldb.ErrNotFound) {
				return Heartbeat{}, false, fmt.Errorf("read the project's cost budget: %w", err)
			}
			return Heartbeat{LeasedUntil: until, CancelRequested: f.Run.CancelRequestedAt != nil, BudgetHeld: err == nil}, true, nil
		},
	})
	return hb, err
}

// exec1 runs a statement that must change exactly one row; under the fence's locks any
// other count is a bug, not a race.
func (s *Service) exec1(ctx context.Context, tx *sqldb.Tx, what, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%s: changed %d rows, want 1 (%v)", what, n, err)
	}
	return nil
}

// AttemptPatch is a holder's change to its running attempt.
type AttemptPatch struct {
	Phase              *api.Phase
	Correction         bool
	ContextSnapshotRef *string
}

// PatchAttempt changes the attempt's phase (freely among the phases), adds a correction
// (CorrectionLimit once MaxCorrections are spent) or records its context snapshot, under
// the fence. Two statements: the fence and the patch (which answers the row).
func (s *Service) PatchAttempt(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, p AttemptPatch) (attempts.Attempt, error) {
	a, _, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[attempts.Attempt]{
		What: "patch attempt",
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, bool, error) {
			if p.Correction && f.Attempt.CorrectionCount >= f.Attempt.MaxCorrections {
				return attempts.Attempt{}, false, apperr.New(api.CodeCorrectionLimit, "the attempt has made all %d corrections it may", f.Attempt.MaxCorrections)
			}
			a, err := attempts.Patch(ctx, tx, attemptID, p.Phase, p.Correction, p.ContextSnapshotRef)
			return a, true, err
		},
	})
	return a, err
}

// ObserveCancellation records, once, that the holder saw the run's cancel request: 409
// NoCancelRequested when none is pending. A repeat answers the stored attempt (the first
// time kept), also after the lease ended.
func (s *Service) ObserveCancellation(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64) (attempts.Attempt, error) {
	a, _, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[attempts.Attempt]{
		What: "observe cancellation",
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, bool, error) {
			if f.Attempt.CancellationObservedAt != nil {
				a, err := attempts.Get(ctx, tx, tenantID, attemptID)
				return a, false, err
			}
			if f.Run.CancelRequestedAt == nil {
				return attempts.Attempt{}, false, apperr.New(api.CodeNoCancelRequested, "no cancel is pending for this run")
			}
			a, err := attempts.ObserveCancellation(ctx, tx, attemptID, f.Now)
			return a, true, err
		},
		Repeat: repeatWhen(tenantID, attemptID, func(f Fenced) bool { return f.Attempt.CancellationObservedAt != nil }),
	})
	return a, err
}

// repeatWhen is a Repeat that answers with the stored attempt when done says the attempt
// already shows what the first try did, and ErrNoRepeat otherwise.
func repeatWhen(tenantID string, attemptID uuid.UUID, done func(Fenced) bool) func(context.Context, *sqldb.Tx, Fenced) (attempts.Attempt, error) {
	return func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, error) {
		if done(f) {
			return attempts.Get(ctx, tx, tenantID, attemptID)
		}
		return attempts.Attempt{}, ErrNoRepeat
	}
}
