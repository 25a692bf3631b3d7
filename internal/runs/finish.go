package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
)

// Completion ends an attempt and its run together.
type Completion struct {
	State       api.AttemptState // Succeeded, Failed or Cancelled
	OutcomeHash *string
	// Error says why the attempt failed or was cancelled (nil: not said); the run keeps a
	// copy of its code and message.
	Error *attempts.Failure
}

var completionOutcome = map[api.AttemptState]api.RunOutcome{
	api.AttemptSucceeded: api.OutcomeSucceeded, api.AttemptFailed: api.OutcomeFailed, api.AttemptCancelled: api.OutcomeCancelled,
}

// Complete ends the attempt and its run. An exact repeat (same state, outcome hash and
// error, same token) of a completion that succeeded answers the stored attempt, also after
// the lease ended (WriteFenced).
func (s *Service) Complete(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, c Completion) (attempts.Attempt, error) {
	outcome := completionOutcome[c.State]
	if outcome == "" {
		return attempts.Attempt{}, apperr.New(api.CodeInvalidRequest, "an attempt completes as succeeded, failed or cancelled")
	}
	if c.Error != nil && c.State == api.AttemptSucceeded {
		return attempts.Attempt{}, apperr.FieldsInvalid(api.FieldError{Field: "error", Reason: "is only for a failed or cancelled attempt"})
	}
	if err := CheckFailure(c.Error); err != nil {
		return attempts.Attempt{}, err
	}
	// promoted: the subject's next queued run became its head (work for waiting claimers).
	promoted := false
	a, created, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[attempts.Attempt]{
		What: "complete attempt", EndsFirst: true,
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, bool, error) {
			promoted = false
			if err := s.lockSubject(ctx, tx, f.Run.TenantID, f.Run.Subject); err != nil {
				return attempts.Attempt{}, false, err
			}
			a, err := s.endAttempt(ctx, tx, f, c.State, c.OutcomeHash, c.Error)
			if err != nil {
				return attempts.Attempt{}, false, err
			}
			promoted, err = s.leaveLease(ctx, tx, f.Run, leaving{Outcome: outcome, At: f.Now, Spent: f.Run.Attempt,
				Failure: runFailure(outcome, c.Error, f.Run, f.Now), SubjectQueued: f.SubjectQueued})
			return a, true, err
		},
		Repeat: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, error) {
			if f.Attempt.State != c.State || !equalPtr(f.Attempt.OutcomeHash, c.OutcomeHash) {
				return attempts.Attempt{}, ErrNoRepeat
			}
			// The fence reads no error (the common path needs none): the stored attempt decides.
			a, err := attempts.Get(ctx, tx, tenantID, attemptID)
			if err != nil {
				return attempts.Attempt{}, err
			}
			if !a.Failure().Equal(c.Error) {
				return attempts.Attempt{}, ErrNoRepeat
			}
			return a, nil
		},
	})
	if err == nil && created && promoted {
		s.wake.notify(tenantID)
	}
	return a, err
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// endAttempt ends the fenced attempt with its error (nil: none) and tells the hooks (its
// pending decisions and open calls close in the same transaction).
func (s *Service) endAttempt(ctx context.Context, tx *sqldb.Tx, f Fenced, state api.AttemptState, outcomeHash *string, failure *attempts.Failure) (attempts.Attempt, error) {
	a, err := attempts.EndWhole(ctx, tx, f.Attempt, f.Stamp, state, f.Now, outcomeHash, failure)
	if err != nil {
		return attempts.Attempt{}, err
	}
	return a, s.attemptEnded(ctx, tx, f.Attempt.TenantID, f.Attempt.AttemptID, f.Now)
}

// Release is a holder giving its run back.
type Release struct {
	// Charge spends one of the run's attempts.
	Charge bool
	// RetryAfter, when set, is when the run is due again (0: at once); nil means the backoff.
	RetryAfter *time.Duration
	// Error says why the holder gave the run back (nil: not said).
	Error *attempts.Failure
}

// Release gives the run back: queued again after the delay, or ended when the run is at
// its attempt limit, past its deadline, or has a cancel pending. It returns the attempt. A
// repeat with the same token answers the released attempt, also after the lease ended.
func (s *Service) Release(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, r Release) (attempts.Attempt, error) {
	if err := CheckFailure(r.Error); err != nil {
		return attempts.Attempt{}, err
	}
	a, created, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[attempts.Attempt]{
		What: "release attempt", EndsFirst: true,
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, bool, error) {
			if err := s.lockSubject(ctx, tx, f.Run.TenantID, f.Run.Subject); err != nil {
				return attempts.Attempt{}, false, err
			}
			a, err := s.endAttempt(ctx, tx, f, api.AttemptReleased, nil, r.Error)
			if err != nil {
				return attempts.Attempt{}, false, err
			}
			spent := f.Run.Attempt
			if r.Charge {
				spent++
			}
			err = s.giveBack(ctx, tx, f.Run, spent, f.Now, r.RetryAfter, nil, r.Error, f.SubjectQueued)
			return a, true, err
		},
		Repeat: repeatWhen(tenantID, attemptID, func(f Fenced) bool { return f.Attempt.State == api.AttemptReleased }),
	})
	if err == nil && created {
		// A run queued again at once is work for this replica's waiting claimers.
		s.wake.notify(tenantID)
	}
	return a, err
}

// giveBack takes a leased run out of its lease: ended when a cancel is pending, when
// spent reached MaxAttempts or past the deadline, else queued again. expiredBefore makes
// the write conditional on the lease having passed (the reaper's take-back); it reports
// sqldb.ErrNotFound when that condition no longer holds. failure is the error the attempt
// ended with, which the run keeps (see runError). subjectQueued is Fenced.SubjectQueued
// (nil: not read). The caller holds the subject lock.
func (s *Service) giveBack(ctx context.Context, tx *sqldb.Tx, run Run, spent int, now time.Time, retryAfter *time.Duration, expiredBefore *time.Time, failure *attempts.Failure, subjectQueued *bool) error {
	// Its callers wake claimers whenever it took a lease back, whatever became the head.
	if outcome := endOutcome(run, spent, now); outcome != "" {
		_, err := s.leaveLease(ctx, tx, run, leaving{Outcome: outcome, At: now, Spent: spent, ExpiredBefore: expiredBefore,
			Failure: runFailure(outcome, failure, run, now), SubjectQueued: subjectQueued})
		return err
	}
	delay := Backoff(spent, s.jitter())
	if retryAfter != nil {
		delay = *retryAfter
	}
	_, err := s.leaveLease(ctx, tx, run, leaving{At: now.Add(delay), Spent: spent, ExpiredBefore: expiredBefore,
		Failure: runFailure("", failure, run, now), SubjectQueued: subjectQueued})
	return err
}

// Error codes the server writes itself (DESIGN.md section 5b), besides the ones holders report.
const (
	ErrorLeaseLost = "lease_lost"
	ErrorDeadline  = "deadline"
	ErrorCancelled = "cancelled"
)

// runError is the error a run keeps when a lease ends (outcome "": it queues again), as
// statement arguments (code, message; NULL when none): a cancel is `cancelled` and a
// passed deadline `deadline`, whatever the attempt said; otherwise (an exhausted run, a
// failure, a requeue) the attempt's own error, nil clearing an older one.
func runError(tx *sqldb.Tx, outcome api.RunOutcome, failure *attempts.Failure, run Run, now time.Time) (code, message any) {
	return failureArgs(tx, runFailure(outcome, failure, run, now))
}

// runFailure is runError's error itself (nil: none).
func runFailure(outcome api.RunOutcome, failure *attempts.Failure, run Run, now time.Time) *attempts.Failure {
	switch {
	case outcome == api.OutcomeCancelled && (failure == nil || run.CancelRequestedAt != nil):
		return cancelledFailure(run)
	case outcome == api.OutcomeDeadline:
		return deadlineFailure(run, now)
	}
	return failure
}

// failureArgs is a run's error as statement arguments (code, message; NULL when none).
func failureArgs(tx *sqldb.Tx, f *attempts.Failure) (code, message any) {
	if f == nil {
		return nil, nil
	}
	return tx.Dialect.Text(f.Code), tx.Dialect.Text(f.Message)
}

func cancelledFailure(run Run) *attempts.Failure {
	if run.CancelRequestedAt != nil {
		return &attempts.Failure{Code: ErrorCancelled,
			Message: "cancelled: a cancel was requested at " + run.CancelRequestedAt.UTC().Format(sqldb.TimeLayout)}
	}
	return &attempts.Failure{Code: ErrorCancelled, Message: "cancelled"}
}

func deadlineFailure(run Run, now time.Time) *attempts.Failure {
	at := now
	if run.DeadlineAt != nil {
		at = *run.DeadlineAt
	}
	return &attempts.Failure{Code: ErrorDeadline, Message: "the run passed its deadline at " + at.UTC().Format(sqldb.TimeLayout)}
}

// CheckFailure refuses an error a holder reports that the store cannot keep as it is: its
// code (the validator checks the API's; this checks every caller's), a message that is not
// text of at most 2,000 UTF-16 code units, or details that are not compact JSON of at most
// 16 KiB (the caller compacts them: FailureOf).
func CheckFailure(f *attempts.Failure) error {
	if f == nil {
		return nil
	}
	var fields []api.FieldError
	if !validate.ErrorCode(f.Code) {
		fields = append(fields, api.FieldError{Field: "error.code", Reason: "must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-'"})
	}
	if !validate.Text(f.Message, api.MaxErrorMessage) {
		fields = append(fields, api.FieldError{Field: "error.message",
			Reason: fmt.Sprintf("must be text of at most %d UTF-16 code units without control characters but tab and line breaks", api.MaxErrorMessage)})
	}
	if len(f.Details) > api.MaxErrorDetailsBytes || (f.Details != "" && !json.Valid([]byte(f.Details))) {
		fields = append(fields, api.FieldError{Field: "error.details",
			Reason: fmt.Sprintf("must be JSON of at most %d bytes compacted", api.MaxErrorDetailsBytes)})
	}
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// FailureOf converts the API's error into the service's, its details compacted (nil: none).
func FailureOf(e *api.AttemptError) *attempts.Failure {
	if e == nil {
		return nil
	}
	f := &attempts.Failure{Code: e.Code, Message: e.Message}
	if d := bytes.TrimSpace(e.Details); len(d) > 0 && string(d) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, d) == nil {
			f.Details = b.String()
		} else {
			f.Details = string(d)
		}
	}
	return f
}

// leaving is how a leased run leaves its lease (leaveLease): ended with Outcome at At, or,
// when Outcome is "", queued again and due at At. Spent is the attempts it has spent,
// Failure the error it keeps (runFailure's; nil clears an older one), and ExpiredBefore,
// when set, makes the write conditional on the lease having passed it (the reaper's
// take-back).
type leaving struct {
	Outcome       api.RunOutcome
	At            time.Time
	Spent         int
	ExpiredBefore *time.Time
	Failure       *attempts.Failure
	// SubjectQueued is Fenced.SubjectQueued: when set, run holds its left columns as well and
	// the statement (requeueUnanswered, endLeasedUnanswered) answers nothing.
	SubjectQueued *bool
}

// leaveLease takes run, a leased run as its fence read it, out of its lease (requeue, or
// endLeased when l has an outcome), then keeps in step what depends on a lease, in the same
// transaction: the subject's head (promoted or given back), the hooks, and last the
// tenant's and the project's leased counts (queries_mssql.go, lock order: a hook may wait
// on another run's attempt, whose transaction may be waiting for the counters). The
// caller holds the subject lock. sqldb.ErrNotFound when the statement changed nothing (the
// reaper lost a race). headMoved says the subject's head marker moved (syncHead): a queued
// run became claimable, which the caller tells waiting claimers after commit.
//
// The run the hooks and the counters read (runTable's left columns, Hooks.RunChanged) is
// run with what the statement wrote, which it knows from l, and the four columns the
// fence does not read (Kind, AgentId, ParentRunId, ContinuedFromRunId), which the
// statement answers: reading back what the fence read or the statement wrote cost a
// complete about 40 thousand instructions (docs/perf/issue-35.md).
func (s *Service) leaveLease(ctx context.Context, tx *sqldb.Tx, run Run, l leaving) (headMoved bool, err error) {
	var row struct {
		Run
		// SubjectQueued: the subject has a queued run (this one, requeued, or another), so
		// its head is to be marked. Without one there is nothing to mark: a subject with a
		// leased run has no head, so no marker is left to clear.
		SubjectQueued bool `db:"SubjectQueued"`
	}
	row.Run = run
	at := sqldb.Truncate(l.At)
	row.Attempt, row.LeasedUntil, row.ErrorCode, row.ErrorMessage = l.Spent, nil, nil, nil
	if l.Failure != nil {
		e := *l.Failure
		row.ErrorCode, row.ErrorMessage = &e.Code, &e.Message
	}
	code, message := failureArgs(tx, l.Failure)
	var query string
	var args []any
	if l.Outcome == "" {
		row.State, row.DueAt = api.RunQueued, at
		query, args = s.q.requeue, []any{run.RunID, run.Epoch, tx.Dialect.Time(l.At), l.Spent,
			tx.Dialect.NullTime(l.ExpiredBefore), code, message}
	} else {
		outcome := l.Outcome
		row.State, row.Outcome, row.EndedAt = api.RunEnded, &outcome, &at
		// Room for endLeasedUnanswered's SubjectQueued.
		args = make([]any, 0, 9)
		query, args = s.q.endLeased, append(args, run.RunID, run.Epoch, outcome, tx.Dialect.Time(l.At), l.Spent,
			tx.Dialect.NullTime(l.ExpiredBefore), code, message)
	}
	if l.SubjectQueued != nil && s.q.endLeasedUnanswered != "" {
		// The fence read what the statement would answer (fenceWhole): the left columns are
		// in run already, and a requeued run is its subject's queued run itself.
		query = s.q.requeueUnanswered
		if l.Outcome != "" {
			query, args = s.q.endLeasedUnanswered, append(args, *l.SubjectQueued)
		}
		row.SubjectQueued = l.Outcome == "" || *l.SubjectQueued
		if err := leave1(ctx, tx, query, args); err != nil {
			return false, fmt.Errorf("take run %s out of its lease: %w", run.RunID, err)
		}
	} else if err := tx.GetContext(ctx, &row, query, args...); err != nil {
		// The answer is scanned over row: it replaces the columns it answers only.
		return false, fmt.Errorf("take run %s out of its lease: %w", run.RunID, err)
	}
	out := row.Run
	if row.SubjectQueued {
		if headMoved, err = s.syncHead(ctx, tx, out.TenantID, out.Subject); err != nil {
			return false, err
		}
	}
	if err := s.notifyRun(ctx, tx, out); err != nil {
		return false, err
	}
	return headMoved, s.countLease(ctx, tx, out, -1)
}

// leave1 runs a run's leaving that answers nothing: sqldb.ErrNotFound when it changed no row,
// as the answering statement reports.
func leave1(ctx context.Context, tx *sqldb.Tx, query string, args []any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	switch n, err := res.RowsAffected(); {
	case err != nil:
		return err
	case n == 0:
		return sqldb.ErrNotFound
	case n != 1:
		return fmt.Errorf("changed %d rows, want 1", n)
	}
	return nil
}

// endQueued ends a queued run with outcome (a cancel, or the reaper at its deadline), then,
// as leaveLease does for a leased run, recomputes its subject's head and tells the hooks.
// The run's error becomes `cancelled` or `deadline`. The caller holds the subject lock and
// the run's. moved is syncHead's hint that the subject's next queued run became its head,
// for the caller to wake claimers after commit.
func (s *Service) endQueued(ctx context.Context, tx *sqldb.Tx, run Run, outcome api.RunOutcome, now time.Time) (out Run, moved bool, err error) {
	code, message := runError(tx, outcome, nil, run, now)
	if out, err = s.getBy(ctx, tx, s.q.endQueued, run.RunID, outcome, tx.Dialect.Time(now), code, message); err != nil {
		return Run{}, false, err
	}
	if err := s.dropWaits(ctx, tx, out); err != nil { // it may have been parked
		return Run{}, false, err
	}
	if moved, err = s.syncHead(ctx, tx, run.TenantID, run.Subject); err != nil {
		return Run{}, false, err
	}
	return out, moved, s.notifyRun(ctx, tx, out)
}

// endOutcome says how a run leaving its lease ends, or "" when it queues again.
func endOutcome(run Run, spent int, now time.Time) api.RunOutcome {
	switch {
	case run.CancelRequestedAt != nil:
		return api.OutcomeCancelled
	case spent >= run.MaxAttempts:
		return api.OutcomeExhausted
	case run.DeadlineAt != nil && !now.Before(*run.DeadlineAt):
		return api.OutcomeDeadline
	}
	return ""
}
