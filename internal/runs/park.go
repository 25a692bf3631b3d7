package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// A parked run (DESIGN.md section 5b, issue 28) is a QUEUED run that keeps its place at
// the head of its subject (its QueuedAt does not change) and is due at WaitForever while
// it waits on conditions: the claim's seeks never reach it, so it needs no claim change,
// holds no lease and counts against no budget. Its open conditions are rows of RunWaits;
// the transaction that deletes the last one makes the run due at once (CloseWaits).

// WaitKind is what a RunWaits row waits on.
type WaitKind int

// The kinds of conditions (RunWaits.TargetKind).
const (
	// WaitDecision waits until a decision is closed (answered, expired or cancelled).
	WaitDecision WaitKind = 0
	// WaitChild waits until a child run has ended.
	WaitChild WaitKind = 1
)

// WaitForever is the due time of a run parked on conditions without a time: later than
// any time a request may name (api.Time stops at 9999-12-31), so no claim reaches it.
var WaitForever = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

// MaxParkConditions bounds the decisions and the children one park names (each list).
const MaxParkConditions = 100

// Park is what a holder parks its run on: at least one of them.
type Park struct {
	DecisionIDs []uuid.UUID
	ChildRunIDs []uuid.UUID
	// DueAt, when set, is when the run is due at the latest (with conditions, a timeout).
	DueAt *time.Time
}

// Park ends the attempt parked, spending no attempt, and puts its run back to QUEUED
// waiting: not offered to any claim until every named decision is closed and every named
// child run has ended, or until DueAt. A condition already met counts as closed, so a park
// whose conditions are all met (and names no later DueAt) is due at once. With a cancel
// pending the run ends cancelled; past its deadline it ends deadline. A repeat with the
// same token answers the parked attempt. Errors: Invalid (nothing named, or too much),
// UnknownDecision (a decision that is not this run's), UnknownRun (a run that is not
// this run's child), and the fence's.
func (s *Service) Park(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, p Park) (attempts.Attempt, error) {
	if err := p.check(); err != nil {
		return attempts.Attempt{}, err
	}
	decisions, err := idList(p.DecisionIDs)
	if err != nil {
		return attempts.Attempt{}, err
	}
	children, err := idList(p.ChildRunIDs)
	if err != nil {
		return attempts.Attempt{}, err
	}
	a, created, err := WriteFenced(ctx, s, tenantID, attemptID, token, FencedWrite[attempts.Attempt]{
		What: "park attempt",
		Do: func(ctx context.Context, tx *sqldb.Tx, f Fenced) (attempts.Attempt, bool, error) {
			if err := s.lockSubject(ctx, tx, f.Run.TenantID, f.Run.Subject); err != nil {
				return attempts.Attempt{}, false, err
			}
			if err := s.checkTargets(ctx, tx, f.Run, decisions, len(p.DecisionIDs), children, len(p.ChildRunIDs)); err != nil {
				return attempts.Attempt{}, false, err
			}
			a, err := s.endAttempt(ctx, tx, f, api.AttemptParked, nil, nil)
			if err != nil {
				return attempts.Attempt{}, false, err
			}
			if outcome := parkOutcome(f.Run, f.Now); outcome != "" {
				_, err = s.leaveLease(ctx, tx, f.Run, leaving{Outcome: outcome, At: f.Now, Spent: f.Run.Attempt,
					Failure: runFailure(outcome, nil, f.Run, f.Now)})
				return a, true, err
			}
			open, err := s.insertWaits(ctx, tx, f, decisions, children)
			if err != nil {
				return attempts.Attempt{}, false, err
			}
			// A parked run has no error of its own: waiting is no failure (nil clears an older one).
			_, err = s.leaveLease(ctx, tx, f.Run, leaving{At: p.due(open, f.Now), Spent: f.Run.Attempt})
			return a, true, err
		},
		Repeat: repeatWhen(tenantID, attemptID, func(f Fenced) bool { return f.Attempt.State == api.AttemptParked }),
	})
	if err == nil && created {
		// The run may be due at once (its conditions were met), and a parked head may have
		// ended (a cancel pending): work for this replica's waiting claimers either way.
		s.wake.notify(tenantID)
	}
	return a, err
}

func (p Park) check() error {
	var errs []api.FieldError
	if len(p.DecisionIDs) == 0 && len(p.ChildRunIDs) == 0 && p.DueAt == nil {
		errs = append(errs, api.FieldError{Field: "decisionIds", Reason: "park names at least one of decisionIds, childRunIds, dueAt"})
	}
	if len(p.DecisionIDs) > MaxParkConditions {
		errs = append(errs, api.FieldError{Field: "decisionIds", Reason: fmt.Sprintf("names at most %d decisions", MaxParkConditions)})
	}
	if len(p.ChildRunIDs) > MaxParkConditions {
		errs = append(errs, api.FieldError{Field: "childRunIds", Reason: fmt.Sprintf("names at most %d runs", MaxParkConditions)})
	}
	if len(errs) > 0 {
		return apperr.FieldsInvalid(errs...)
	}
	return nil
}

// due is when the parked run is due: at now when every condition is met already (or the
// time named has passed), else at DueAt, else never until the last condition closes.
func (p Park) due(open int, now time.Time) time.Time {
	conditions := len(p.DecisionIDs) + len(p.ChildRunIDs)
	switch {
	case conditions > 0 && open == 0:
		return now
	case p.DueAt != nil && p.DueAt.Before(now):
		return now
	case p.DueAt != nil:
		return *p.DueAt
	}
	return WaitForever
}

// parkOutcome says how a parking run ends instead of waiting, or "" when it waits.
func parkOutcome(run Run, now time.Time) api.RunOutcome {
	switch {
	case run.CancelRequestedAt != nil:
		return api.OutcomeCancelled
	case run.DeadlineAt != nil && !now.Before(*run.DeadlineAt):
		return api.OutcomeDeadline
	}
	return ""
}

// idList is ids, each once, as the JSON array the statements read.
func idList(ids []uuid.UUID) (string, error) {
	seen := make(map[uuid.UUID]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id.String())
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func distinct(list string) int {
	var ids []string
	_ = json.Unmarshal([]byte(list), &ids)
	return len(ids)
}

// checkTargets refuses a park that names a decision that is not the run's (another run's,
// another tenant's, or none) or a run that is not its child, as a missing reference.
func (s *Service) checkTargets(ctx context.Context, tx *sqldb.Tx, run Run, decisions string, nd int, children string, nc int) error {
	if nd > 0 {
		var n int
		if err := tx.GetContext(ctx, &n, s.q.parkDecisions, run.TenantID, tx.Dialect.JSON(decisions), run.RunID); err != nil {
			return fmt.Errorf("read the decisions to wait on: %w", err)
		}
		if n != distinct(decisions) {
			return apperr.New(api.CodeUnknownDecision, "decisionIds names a decision that is not this run's")
		}
	}
	if nc > 0 {
		var n int
		if err := tx.GetContext(ctx, &n, s.q.parkChildren, run.TenantID, tx.Dialect.JSON(children), run.RunID); err != nil {
			return fmt.Errorf("read the children to wait on: %w", err)
		}
		if n != distinct(children) {
			return apperr.New(api.CodeUnknownRun, "childRunIds names a run that is not a child of this run")
		}
	}
	return nil
}

// insertWaits replaces the run's waits with one row per named condition that is still
// open (a pending decision not past its ExpiresAt, a child run not ended), and answers how
// many it wrote.
func (s *Service) insertWaits(ctx context.Context, tx *sqldb.Tx, f Fenced, decisions, children string) (int, error) {
	if _, err := tx.ExecContext(ctx, s.q.clearWaits, f.Run.TenantID, f.Run.RunID); err != nil {
		return 0, fmt.Errorf("clear the run's waits: %w", err)
	}
	open := 0
	for _, w := range []struct {
		query, list string
	}{{s.q.waitDecisions, decisions}, {s.q.waitChildren, children}} {
		if w.list == "[]" {
			continue
		}
		res, err := tx.ExecContext(ctx, w.query, f.Run.TenantID, tx.Dialect.JSON(w.list), f.Run.RunID, tx.Dialect.Time(f.Now))
		if err != nil {
			return 0, fmt.Errorf("record the run's waits: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("record the run's waits: %w", err)
		}
		open += int(n)
	}
	return open, nil
}

// CloseWaits is the wake-up: inside the transaction that closed the conditions ids of
// kind (decisions answered, expired or cancelled; child runs ended), it deletes the waits
// on them and makes each run whose last wait that was due at now. It answers how many runs
// it made due; the caller tells waiting claimers after commit (Service.WakeClaimers), or
// leaves them to their poll. On SQL Server it locks each waiting run (U) before deleting,
// so two transactions closing a run's last two conditions serialise on the run and the
// second sees the first's delete.
func CloseWaits(ctx context.Context, tx *sqldb.Tx, tenantID string, kind WaitKind, ids []uuid.UUID, now time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	list, err := idList(ids)
	if err != nil {
		return 0, err
	}
	var woken []uuid.UUID
	if err := tx.SelectContext(ctx, &woken, queriesFor(tx.Dialect).closeWaits, tenantID, int(kind), tx.Dialect.JSON(list),
		tx.Dialect.Time(now)); err != nil {
		return 0, fmt.Errorf("close waits: %w", err)
	}
	if _, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).dropTargets, tenantID, int(kind), tx.Dialect.JSON(list)); err != nil {
		return 0, fmt.Errorf("close waits: %w", err)
	}
	return len(woken), nil
}

// CloseWaits is CloseWaits that, when it made a run due, wakes this replica's waiting
// claimers after commit.
func (s *Service) CloseWaits(ctx context.Context, tx *sqldb.Tx, tenantID string, kind WaitKind, ids []uuid.UUID, now time.Time) error {
	n, err := CloseWaits(ctx, tx, tenantID, kind, ids, now)
	if err == nil && n > 0 {
		tx.AfterCommit(func() { s.wake.notify(tenantID) })
	}
	return err
}

// runEnded wakes a parent waiting on a run that has just ended, when it was the parent's
// last condition.
func (s *Service) runEnded(ctx context.Context, tx *sqldb.Tx, run Run) error {
	if run.ParentRunID.Valid && run.EndedAt != nil {
		if err := s.CloseWaits(ctx, tx, run.TenantID, WaitChild, []uuid.UUID{run.RunID}, *run.EndedAt); err != nil {
			return err
		}
	}
	return nil
}

// dropWaits deletes the waits of a queued run that ends (cancel, deadline).
func (s *Service) dropWaits(ctx context.Context, tx *sqldb.Tx, run Run) error {
	if _, err := tx.ExecContext(ctx, s.q.clearWaits, run.TenantID, run.RunID); err != nil {
		return fmt.Errorf("drop the waits of run %s: %w", run.RunID, err)
	}
	return nil
}

// WakeClaimers tells this replica's claimers waiting for the tenant that a run is due.
func (s *Service) WakeClaimers(tenantID string) { s.wake.notify(tenantID) }

// Waiting is one open condition of a parked run, as the console shows it.
type Waiting struct {
	Kind      WaitKind  `db:"TargetKind"`
	TargetID  uuid.UUID `db:"TargetId"`
	CreatedAt time.Time `db:"CreatedAt"`
}

// WaitsOf lists a run's open conditions (at most 2 x MaxParkConditions), oldest first.
func (s *Service) WaitsOf(ctx context.Context, tenantID string, runID uuid.UUID) ([]Waiting, error) {
	var out []Waiting
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &out, s.q.waitsOf, tenantID, runID, 2*MaxParkConditions)
	})
	if err != nil {
		return nil, fmt.Errorf("read the waits of run %s: %w", runID, err)
	}
	return out, nil
}

// parkLost parks, instead of giving back, the run of a lost attempt that was waiting for a
// person (phase awaiting_decision with a decision still pending): the holder died while
// waiting (SIGKILL, a crash), which is no failure of the work, so no attempt is spent and
// the run waits on those decisions as if its holder had parked it; the answer makes it due.
// A run with a cancel pending or past its deadline is left to giveBack, which ends it.
// parked false (and nothing written) otherwise. The caller holds the reaper's locks.
func (s *Service) parkLost(ctx context.Context, tx *sqldb.Tx, f Fenced) (bool, error) {
	if f.Attempt.Phase != api.PhaseAwaitingDecision || parkOutcome(f.Run, f.Now) != "" {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, s.q.clearWaits, f.Run.TenantID, f.Run.RunID); err != nil {
		return false, fmt.Errorf("clear the run's waits: %w", err)
	}
	res, err := tx.ExecContext(ctx, s.q.waitLostDecisions, f.Run.TenantID, f.Attempt.AttemptID, f.Run.RunID, tx.Dialect.Time(f.Now))
	if err != nil {
		return false, fmt.Errorf("park the run of a lost attempt: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	now := f.Now
	_, err = s.leaveLease(ctx, tx, f.Run, leaving{At: WaitForever, Spent: f.Run.Attempt, ExpiredBefore: &now})
	if errors.Is(err, sqldb.ErrNotFound) {
		return false, errLost
	}
	return err == nil, err
}
