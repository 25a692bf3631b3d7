package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// ReapResult counts what one reaper pass did.
type ReapResult struct {
	TakenBack int // expired leases queued again or ended
	Skipped   int // take-backs that failed or that a renewal or another replica won
	Overdue   int // queued runs ended past their deadline
}

// RunReaper reaps every ReaperInterval until ctx ends. Every replica runs one; they need no
// leader, because each take-back is one conditional write that only one of them can win.
func (s *Service) RunReaper(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReaperInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.Reap(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "reaper pass failed", "err", err)
			continue
		}
		if res != (ReapResult{}) {
			s.log.InfoContext(ctx, "reaper pass", "taken_back", res.TakenBack, "skipped", res.Skipped, "overdue", res.Overdue)
		}
	}
}

type expiredLease struct {
	RunID    uuid.UUID `db:"RunId"`
	TenantID string    `db:"TenantId"`
	Epoch    int64     `db:"Epoch"`
}

// Reap takes back expired leases and ends overdue queued runs, across tenants, in bounded
// batches. A take-back that fails is logged and skipped until the next pass, so it cannot
// hold back the runs behind it.
func (s *Service) Reap(ctx context.Context) (ReapResult, error) {
	var res ReapResult
	var expired []expiredLease
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &expired, s.q.expiredLeases, tx.Dialect.Time(now), s.cfg.ReaperBatch, s.floor(tx))
	})
	if err != nil {
		return res, fmt.Errorf("find expired leases: %w", err)
	}
	for _, e := range expired {
		took, err := s.takeBack(ctx, e)
		s.observeTakeBack(e.TenantID, took, err)
		switch {
		case err != nil:
			res.Skipped++
			s.log.WarnContext(ctx, "take-back failed; skipped until the next pass", "run", e.RunID, "err", err)
		case took:
			res.TakenBack++
			s.wake.notify(e.TenantID)
		default:
			res.Skipped++
		}
	}
	var overdue []expiredLease
	err = s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &overdue, s.q.overdueQueued, tx.Dialect.Time(now), s.cfg.ReaperBatch, s.floor(tx))
	})
	if err != nil {
		return res, fmt.Errorf("find overdue runs: %w", err)
	}
	for _, o := range overdue {
		ended, err := s.endOverdue(ctx, o)
		if err != nil {
			s.log.WarnContext(ctx, "ending an overdue run failed; skipped until the next pass", "run", o.RunID, "err", err)
			continue
		}
		if ended {
			res.Overdue++
		}
	}
	return res, nil
}

// floor is the earliest expiry the reaper reads: the database's clock floor, which only a
// test's clock in a range of its own sets (sqldb.Config.ClockFloor), else the year 1.
func (s *Service) floor(tx *sqldb.Tx) any {
	f := s.db.ClockFloor()
	if f.IsZero() {
		f = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return tx.Dialect.Time(f)
}

// errLost rolls back a take-back that a renewal or another replica won.
var errLost = errors.New("take-back lost the race")

// takeBack marks the lost attempt Lost, then with one conditional write takes its run back;
// if that write finds nothing, the whole transaction rolls back. Lock order as every
// fenced write: the attempt and its run (one statement), then the subject.
func (s *Service) takeBack(ctx context.Context, e expiredLease) (bool, error) {
	err := s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var row fenceRow
		err = tx.GetContext(ctx, &row, s.q.fenceRunning, e.TenantID, e.RunID, e.Epoch)
		if errors.Is(err, sqldb.ErrNotFound) {
			return errLost // completed or taken back meanwhile
		}
		if err != nil {
			return fmt.Errorf("lock running attempt: %w", err)
		}
		row.fillRun()
		run := row.Run
		if run.State != api.RunLeased || run.Epoch != e.Epoch || run.LeasedUntil == nil || !run.LeasedUntil.Before(now) {
			return errLost
		}
		if err := s.lockSubject(ctx, tx, run.TenantID, run.Subject); err != nil {
			return err
		}
		f := Fenced{Attempt: row.Attempt, Run: run, Now: now}
		lost := leaseLost(run)
		if _, err := s.endAttempt(ctx, tx, f, api.AttemptLost, nil, lost); err != nil {
			return errors.Join(errLost, err)
		}
		if parked, err := s.parkLost(ctx, tx, f); parked || err != nil {
			return err
		}
		// A lost lease spends an attempt (seed 003).
		err = s.giveBack(ctx, tx, run, run.Attempt+1, now, nil, &now, lost, nil)
		if errors.Is(err, sqldb.ErrNotFound) {
			return errLost
		}
		return err
	})
	if errors.Is(err, errLost) {
		return false, nil
	}
	return err == nil, err
}

// endOverdue ends a queued run past its deadline: the subject lock, then the run's (lock
// order), a re-check under both, the end and the subject's head.
func (s *Service) endOverdue(ctx context.Context, o expiredLease) (bool, error) {
	ended, moved := false, false
	err := s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		ended, moved = false, false
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		seen, err := s.getBy(ctx, tx, s.q.get, o.TenantID, o.RunID)
		if err != nil || seen.State != api.RunQueued {
			return err
		}
		if err := s.lockSubject(ctx, tx, o.TenantID, seen.Subject); err != nil {
			return err
		}
		run, err := s.getBy(ctx, tx, s.q.lock, o.TenantID, o.RunID)
		if err != nil {
			return err
		}
		if run.State != api.RunQueued || run.DeadlineAt == nil || !run.DeadlineAt.Before(now) {
			return nil
		}
		if _, moved, err = s.endQueued(ctx, tx, run, api.OutcomeDeadline, now); err != nil {
			return err
		}
		ended = true
		return nil
	})
	if err == nil && moved {
		// The subject's next queued run is its head now.
		s.wake.notify(o.TenantID)
	}
	return ended, err
}

// leaseLost is the error of an attempt whose lease the reaper took back: when it expired
// and at which epoch (the holder stopped renewing: it crashed, hung or lost the network).
func leaseLost(run Run) *attempts.Failure {
	msg := fmt.Sprintf("the lease at epoch %d expired", run.Epoch)
	if run.LeasedUntil != nil {
		msg += " at " + run.LeasedUntil.UTC().Format(sqldb.TimeLayout)
	}
	return &attempts.Failure{Code: ErrorLeaseLost, Message: msg + " without a renewal"}
}
