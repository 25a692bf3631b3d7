package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TaskLock is a scheduled task's run lock (seed 000): one holder per agent and task until
// HeldUntil, after which anyone may take it.
type TaskLock struct {
	TenantID  string    `db:"TenantId"`
	AgentID   string    `db:"AgentId"`
	TaskID    string    `db:"TaskId"`
	HolderID  string    `db:"HolderId"`
	HeldUntil time.Time `db:"HeldUntil"`
	CreatedAt time.Time `db:"CreatedAt"`
	UpdatedAt time.Time `db:"UpdatedAt"`
}

func lockHeld(l TaskLock) error {
	e := apperr.New(apperr.LockHeld, "another holder has this task until %s", l.HeldUntil.Format(time.RFC3339Nano))
	e.Extra = map[string]any{"heldUntil": l.HeldUntil.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	return e
}

// AcquireLock takes the lock for holder, or renews it when holder already has it. It
// reports whether the lock was newly taken. Errors: LockHeld while another holder's lock
// has not expired.
func (s *Service) AcquireLock(ctx context.Context, tenantID, agentID, taskID, holderID string, ttl time.Duration) (TaskLock, bool, error) {
	var (
		out     TaskLock
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		until := now.Add(ttl)
		cur, err := s.getLock(ctx, tx, tenantID, agentID, taskID)
		switch {
		case errors.Is(err, sqldb.ErrNotFound):
			_, err = tx.ExecContext(ctx, s.q.insertLock, tenantID, agentID, taskID, holderID, tx.Dialect.Time(until), tx.Dialect.Time(now))
			if sqldb.IsConflict(err) {
				// Taken by a concurrent acquire: report it as held.
				cur, gerr := s.getLock(ctx, tx, tenantID, agentID, taskID)
				if gerr != nil {
					return gerr
				}
				return lockHeld(cur)
			}
			if err != nil {
				return fmt.Errorf("insert lock: %w", err)
			}
			created = true
		case err != nil:
			return err
		case cur.HolderID != holderID && cur.HeldUntil.After(now):
			return lockHeld(cur)
		default:
			created = cur.HolderID != holderID
			if err := s.exec1(ctx, tx, "renew lock", s.q.updateLock, tenantID, agentID, taskID, holderID, tx.Dialect.Time(until), tx.Dialect.Time(now)); err != nil {
				return err
			}
		}
		out, err = s.getLock(ctx, tx, tenantID, agentID, taskID)
		return err
	})
	if err != nil {
		return TaskLock{}, false, fmt.Errorf("acquire task lock: %w", err)
	}
	return out, created, nil
}

// ReleaseLock lets go of holder's lock. Releasing a lock nobody holds is not an error.
// Errors: LockHeld when another holder's lock has not expired.
func (s *Service) ReleaseLock(ctx context.Context, tenantID, agentID, taskID, holderID string) error {
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		cur, err := s.getLock(ctx, tx, tenantID, agentID, taskID)
		if errors.Is(err, sqldb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.HolderID != holderID && cur.HeldUntil.After(now) {
			return lockHeld(cur)
		}
		_, err = tx.ExecContext(ctx, s.q.deleteLock, tenantID, agentID, taskID)
		return err
	})
	if err != nil {
		return fmt.Errorf("release task lock: %w", err)
	}
	return nil
}

func (s *Service) getLock(ctx context.Context, tx *sqldb.Tx, tenantID, agentID, taskID string) (TaskLock, error) {
	var l TaskLock
	err := tx.GetContext(ctx, &l, s.q.getLock, tenantID, agentID, taskID)
	return l, err
}
