package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Fenced is a holder's write admitted by the fence: the attempt and run rows, both locked
// until the transaction ends, and the transaction's time.
type Fenced struct {
	Attempt attempts.Attempt
	Run     Run
	Now     time.Time
}

// Fence admits a holder's write inside tx, or refuses it. It locks the attempt row, then
// the run row (the lock order of every writer of both), and checks that the run is leased
// at the presented token and the lease has not passed. Errors: NotFound (no such attempt
// for this tenant), StaleLease (the token is not the run's current epoch), LeaseExpired
// (same epoch, but the run is no longer leased or its lease passed).
func (s *Service) Fence(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, token int64) (Fenced, error) {
	a, err := attempts.Lock(ctx, tx, tenantID, attemptID)
	if err != nil {
		return Fenced{}, err
	}
	run, err := s.getBy(ctx, tx, s.q.lock, tenantID, a.RunID)
	if err != nil {
		return Fenced{}, err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Fenced{}, err
	}
	if token != a.FencingToken || token != run.Epoch {
		return Fenced{}, apperr.New(apperr.StaleLease, "fencing token %d is not the run's current epoch", token)
	}
	if run.State != Leased || a.State != attempts.Running || run.LeasedUntil == nil || !now.Before(*run.LeasedUntil) {
		return Fenced{}, apperr.New(apperr.LeaseExpired, "the lease at fencing token %d has ended", token)
	}
	return Fenced{Attempt: a, Run: run, Now: now}, nil
}

// Heartbeat is the answer to a renewal.
type Heartbeat struct {
	LeasedUntil     time.Time `json:"leasedUntil"`
	CancelRequested bool      `json:"cancelRequested"`
}

// Heartbeat renews the lease for leaseSeconds (0: the length stored at claim) and tells
// the holder whether a cancel is pending.
func (s *Service) Heartbeat(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, leaseSeconds int) (Heartbeat, error) {
	var hb Heartbeat
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		f, err := s.Fence(ctx, tx, tenantID, attemptID, token)
		if err != nil {
			return err
		}
		secs := leaseSeconds
		if secs <= 0 && f.Run.LeaseSeconds != nil {
			secs = *f.Run.LeaseSeconds
		}
		if secs <= 0 {
			secs = int(s.cfg.LeaseTTL / time.Second)
		}
		until := f.Now.Add(time.Duration(secs) * time.Second)
		if err := s.exec1(ctx, tx, "renew lease", s.q.heartbeat, f.Run.RunID, f.Run.Epoch, tx.Dialect.Time(until), secs); err != nil {
			return err
		}
		hb = Heartbeat{LeasedUntil: until, CancelRequested: f.Run.CancelRequestedAt != nil}
		return nil
	})
	if err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat: %w", err)
	}
	return hb, nil
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

// Completion ends an attempt and its run together.
type Completion struct {
	State       attempts.State // Succeeded, Failed or Cancelled
	OutcomeHash *string
}

// Complete ends the attempt and its run. An exact repeat of a completion that succeeded
// answers as the first did (checked before the fence, so it works after the lease ended).
func (s *Service) Complete(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, c Completion) (attempts.Attempt, error) {
	var out attempts.Attempt
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		prev, err := attempts.Get(ctx, tx, tenantID, attemptID)
		if err != nil {
			return err
		}
		if prev.State == c.State && prev.FencingToken == token && equalPtr(prev.OutcomeHash, c.OutcomeHash) {
			out = prev
			return nil
		}
		f, err := s.Fence(ctx, tx, tenantID, attemptID, token)
		if err != nil {
			return err
		}
		outcome := map[attempts.State]string{
			attempts.Succeeded: OutcomeSucceeded, attempts.Failed: OutcomeFailed, attempts.Cancelled: OutcomeCancelled,
		}[c.State]
		if outcome == "" {
			return apperr.New(apperr.Invalid, "an attempt completes as succeeded, failed or cancelled")
		}
		if err := s.endAttempt(ctx, tx, f, c.State, c.OutcomeHash); err != nil {
			return err
		}
		if err := s.exec1(ctx, tx, "end run", s.q.endLeased, f.Run.RunID, f.Run.Epoch, outcome, tx.Dialect.Time(f.Now), f.Run.Attempt, nil); err != nil {
			return err
		}
		if err := s.unleased(ctx, tx, f.Run); err != nil {
			return err
		}
		if err := s.runChanged(ctx, tx, tenantID, f.Run.RunID); err != nil {
			return err
		}
		out, err = attempts.Get(ctx, tx, tenantID, attemptID)
		return err
	})
	if err != nil {
		return attempts.Attempt{}, fmt.Errorf("complete attempt: %w", err)
	}
	return out, nil
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (s *Service) endAttempt(ctx context.Context, tx *sqldb.Tx, f Fenced, state attempts.State, outcomeHash *string) error {
	ok, err := attempts.End(ctx, tx, f.Attempt.AttemptID, state, f.Now, outcomeHash)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("end attempt %s: it was no longer running", f.Attempt.AttemptID)
	}
	return s.attemptEnded(ctx, tx, f.Attempt.TenantID, f.Attempt.AttemptID, f.Now)
}

// unleased keeps the project's leased count as the run leaves LEASED.
func (s *Service) unleased(ctx context.Context, tx *sqldb.Tx, r Run) error {
	if _, err := tx.ExecContext(ctx, s.q.projectLeased, r.TenantID, r.ProjectID, -1); err != nil {
		return fmt.Errorf("count project release: %w", err)
	}
	return nil
}

// Release is a holder giving its run back.
type Release struct {
	// Charge spends one of the run's attempts.
	Charge bool
	// RetryAfter, when set, is when the run is due again (0: at once); nil means the backoff.
	RetryAfter *time.Duration
}

// Release gives the run back: queued again after the delay, or ended when the run is at
// its attempt limit, past its deadline, or has a cancel pending. It returns the attempt.
func (s *Service) Release(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, r Release) (attempts.Attempt, error) {
	var out attempts.Attempt
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		prev, err := attempts.Get(ctx, tx, tenantID, attemptID)
		if err != nil {
			return err
		}
		if prev.State == attempts.Released && prev.FencingToken == token {
			out = prev
			return nil
		}
		f, err := s.Fence(ctx, tx, tenantID, attemptID, token)
		if err != nil {
			return err
		}
		if err := s.endAttempt(ctx, tx, f, attempts.Released, nil); err != nil {
			return err
		}
		spent := f.Run.Attempt
		if r.Charge {
			spent++
		}
		if err := s.giveBack(ctx, tx, f.Run, spent, f.Now, r.RetryAfter, nil); err != nil {
			return err
		}
		out, err = attempts.Get(ctx, tx, tenantID, attemptID)
		return err
	})
	if err != nil {
		return attempts.Attempt{}, fmt.Errorf("release attempt: %w", err)
	}
	// A run queued again at once is work for this replica's waiting claimers.
	s.wake.notify(tenantID)
	return out, nil
}

// giveBack takes a leased run out of its lease: ended when a cancel is pending, when
// spent reached MaxAttempts or past the deadline, else queued again. expiredBefore makes
// the write conditional on the lease having passed (the reaper's take-back); it reports
// sqldb.ErrNotFound when that condition no longer holds.
func (s *Service) giveBack(ctx context.Context, tx *sqldb.Tx, run Run, spent int, now time.Time, retryAfter *time.Duration, expiredBefore *time.Time) error {
	var (
		query string
		args  []any
	)
	switch outcome := endOutcome(run, spent, now); {
	case outcome != "":
		query = s.q.endLeased
		args = []any{run.RunID, run.Epoch, outcome, tx.Dialect.Time(now), spent, tx.Dialect.NullTime(expiredBefore)}
	default:
		delay := Backoff(spent, s.jitter())
		if retryAfter != nil {
			delay = *retryAfter
		}
		query = s.q.requeue
		args = []any{run.RunID, run.Epoch, tx.Dialect.Time(now.Add(delay)), spent, tx.Dialect.NullTime(expiredBefore)}
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("give back run: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("give back run %s: %w", run.RunID, sqldb.ErrNotFound)
	}
	if err := s.unleased(ctx, tx, run); err != nil {
		return err
	}
	return s.runChanged(ctx, tx, run.TenantID, run.RunID)
}

// endOutcome says how a run leaving its lease ends, or "" when it queues again.
func endOutcome(run Run, spent int, now time.Time) string {
	switch {
	case run.CancelRequestedAt != nil:
		return OutcomeCancelled
	case spent >= run.MaxAttempts:
		return OutcomeExhausted
	case run.DeadlineAt != nil && !now.Before(*run.DeadlineAt):
		return OutcomeDeadline
	}
	return ""
}

// Cancel cancels a run: a queued run ends cancelled at once, a leased one gets a cancel
// request its holder sees on its next heartbeat, an ended one is left as it is. It is
// idempotent and returns the run.
func (s *Service) Cancel(ctx context.Context, tenantID string, runID uuid.UUID) (Run, error) {
	var out Run
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		run, err := s.getBy(ctx, tx, s.q.lock, tenantID, runID)
		if err != nil {
			return err
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		switch run.State {
		case Queued:
			err = s.exec1(ctx, tx, "cancel queued run", s.q.endQueued, runID, OutcomeCancelled, tx.Dialect.Time(now))
			if err == nil {
				err = s.runChanged(ctx, tx, tenantID, runID)
			}
		case Leased:
			if run.CancelRequestedAt == nil {
				err = s.exec1(ctx, tx, "request cancel", s.q.requestCancel, runID, tx.Dialect.Time(now))
			}
		}
		if err != nil {
			return err
		}
		out, err = s.getBy(ctx, tx, s.q.get, tenantID, runID)
		return err
	})
	if err != nil {
		return Run{}, fmt.Errorf("cancel run: %w", err)
	}
	return out, nil
}

// Continuation is what a continueAfter may change of the ended run's spec.
type Continuation struct {
	DueAt      *time.Time
	SnapshotID *uuid.UUID
}

// Continue queues the continuation of an ended run: the same spec on a new run that starts
// at the old run's epoch (so its first token is greater than any before) and spends one
// more attempt. A repeat returns the existing continuation with created=false. Errors:
// IllegalTransition (the run has not ended), AttemptsExhausted.
func (s *Service) Continue(ctx context.Context, c Caller, runID uuid.UUID, cont Continuation) (Run, bool, error) {
	var (
		out     Run
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		old, err := s.getBy(ctx, tx, s.q.lock, c.TenantID, runID)
		if err != nil {
			return err
		}
		if next, err := s.getBy(ctx, tx, s.q.continuation, c.TenantID, runID); err == nil {
			out = next
			return nil
		} else if !apperr.Is(err, apperr.NotFound) {
			return err
		}
		if old.State != Ended {
			return apperr.New(apperr.IllegalTransition, "only an ended run can be continued; this one is %s", old.State)
		}
		spent := old.Attempt + 1
		if spent > old.MaxAttempts {
			return apperr.New(apperr.AttemptsExhausted, "the run has spent %d of %d attempts", old.Attempt, old.MaxAttempts)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		due := now
		if cont.DueAt != nil {
			due = sqldb.Truncate(*cont.DueAt)
		}
		snapshot := old.SnapshotID
		if cont.SnapshotID != nil {
			snapshot = *cont.SnapshotID
		}
		var parent any
		if old.ParentRunID.Valid {
			parent = old.ParentRunID.UUID
		}
		id := ids.New()
		_, err = tx.ExecContext(ctx, s.q.insert, id, c.TenantID, old.ProjectID, old.EnvironmentID, old.Subject,
			old.Kind, old.AgentID, old.StepID, snapshot, old.Input, int(old.Band), old.Epoch, spent, old.MaxAttempts,
			old.MaxCorrections, tx.Dialect.Time(now), tx.Dialect.Time(due), tx.Dialect.NullTime(old.DeadlineAt), nil, parent,
			old.Depth, old.RunID, c.KeyID)
		if sqldb.IsConflict(err) {
			// A concurrent continue won: answer with its run.
			out, err = s.getBy(ctx, tx, s.q.continuation, c.TenantID, runID)
			return err
		}
		if err != nil {
			return fmt.Errorf("insert continuation: %w", err)
		}
		created = true
		if out, err = s.getBy(ctx, tx, s.q.get, c.TenantID, id); err != nil {
			return err
		}
		return s.notifyRun(ctx, tx, out)
	})
	if err != nil {
		return Run{}, false, fmt.Errorf("continue run: %w", err)
	}
	if created {
		s.wake.notify(c.TenantID)
	}
	return out, created, nil
}

// AttemptPatch is a holder's change to its running attempt.
type AttemptPatch struct {
	Phase              *attempts.Phase
	Correction         bool
	ContextSnapshotRef *string
}

// PatchAttempt changes the attempt's phase (freely among the phases), adds a correction
// (CorrectionLimit once MaxCorrections are spent) or records its context snapshot, under
// the fence.
func (s *Service) PatchAttempt(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, p AttemptPatch) (attempts.Attempt, error) {
	return s.fencedAttemptWrite(ctx, tenantID, attemptID, token, "patch attempt", func(tx *sqldb.Tx, f Fenced) error {
		if p.Correction && f.Attempt.CorrectionCount >= f.Attempt.MaxCorrections {
			return apperr.New(apperr.CorrectionLimit, "the attempt has made all %d corrections it may", f.Attempt.MaxCorrections)
		}
		return attempts.Patch(ctx, tx, attemptID, p.Phase, p.Correction, p.ContextSnapshotRef)
	})
}

// ObserveCancellation records, once, that the holder saw the run's cancel request.
func (s *Service) ObserveCancellation(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64) (attempts.Attempt, error) {
	return s.fencedAttemptWrite(ctx, tenantID, attemptID, token, "observe cancellation", func(tx *sqldb.Tx, f Fenced) error {
		return attempts.ObserveCancellation(ctx, tx, attemptID, f.Now)
	})
}

// fencedAttemptWrite runs write under the fence and returns the attempt as stored after it.
func (s *Service) fencedAttemptWrite(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, what string, write func(*sqldb.Tx, Fenced) error) (attempts.Attempt, error) {
	var out attempts.Attempt
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		f, err := s.Fence(ctx, tx, tenantID, attemptID, token)
		if err != nil {
			return err
		}
		if err := write(tx, f); err != nil {
			return err
		}
		out, err = attempts.Get(ctx, tx, tenantID, attemptID)
		return err
	})
	if err != nil {
		return attempts.Attempt{}, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// RequestCancelTx asks the holder of a leased run to stop, inside the caller's transaction
// (a release draining under the cancel policy). A run that is not leased, or already has
// a cancel pending, is left as it is.
func (s *Service) RequestCancelTx(ctx context.Context, tx *sqldb.Tx, tenantID string, runID uuid.UUID) error {
	run, err := s.getBy(ctx, tx, s.q.lock, tenantID, runID)
	if err != nil {
		return err
	}
	if run.State != Leased || run.CancelRequestedAt != nil {
		return nil
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	return s.exec1(ctx, tx, "request cancel", s.q.requestCancel, runID, tx.Dialect.Time(now))
}
