// Package locks keeps task run locks (seed 000): a scheduled task of an agent has one holder
// at a time until the lock's HeldUntil, after which anyone may take it. It stands apart from
// the run-lease core: a lock names an agent's task, not a run.
package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Lock is a scheduled task's run lock: one holder per agent and task until HeldUntil,
// after which anyone may take it.
type Lock struct {
	TenantID  string    `db:"TenantId"`
	AgentID   string    `db:"AgentId"`
	TaskID    string    `db:"TaskId"`
	HolderID  string    `db:"HolderId"`
	HeldUntil time.Time `db:"HeldUntil"`
	CreatedAt time.Time `db:"CreatedAt"`
	UpdatedAt time.Time `db:"UpdatedAt"`
}

// Wire returns the lock as the API sends it.
func (l Lock) Wire() api.TaskLock {
	return api.TaskLock{AgentID: l.AgentID, TaskID: l.TaskID, HolderID: l.HolderID,
		HeldUntil: api.NewTime(l.HeldUntil), CreatedAt: api.NewTime(l.CreatedAt), UpdatedAt: api.NewTime(l.UpdatedAt)}
}

// Store keeps task run locks.
type Store struct {
	db *sqldb.DB
	q  *queries
}

// NewStore returns the lock store of db.
func NewStore(db *sqldb.DB) *Store { return &Store{db: db, q: queriesFor(db.Dialect)} }

func lockHeld(l Lock) error {
	e := apperr.New(api.CodeLockHeld, "another holder has this task until %s", l.HeldUntil.Format(time.RFC3339Nano))
	e.HeldUntil = l.HeldUntil
	return e
}

// Acquire takes the lock for holder, or renews it when holder already has it. It reports
// whether the lock was newly taken. Errors: LockHeld while another holder's lock has not
// expired.
func (s *Store) Acquire(ctx context.Context, tenantID, agentID, taskID, holderID string, ttl time.Duration) (Lock, bool, error) {
	var (
		out     Lock
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		until := now.Add(ttl)
		cur, err := s.get(ctx, tx, tenantID, agentID, taskID)
		switch {
		case errors.Is(err, sqldb.ErrNotFound):
			_, err = tx.ExecContext(ctx, s.q.insertLock, tenantID, agentID, taskID, holderID, tx.Dialect.Time(until), tx.Dialect.Time(now))
			if sqldb.IsConflict(err) {
				// Taken by a concurrent acquire: report it as held.
				cur, gerr := s.get(ctx, tx, tenantID, agentID, taskID)
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
			if err := exec1(ctx, tx, "renew lock", s.q.updateLock, tenantID, agentID, taskID, holderID, tx.Dialect.Time(until), tx.Dialect.Time(now)); err != nil {
				return err
			}
		}
		out, err = s.get(ctx, tx, tenantID, agentID, taskID)
		return err
	})
	if err != nil {
		return Lock{}, false, fmt.Errorf("acquire task lock: %w", err)
	}
	return out, created, nil
}

// Release lets go of holder's lock. Releasing a lock nobody holds is not an error.
// Errors: LockHeld when another holder's lock has not expired.
func (s *Store) Release(ctx context.Context, tenantID, agentID, taskID, holderID string) error {
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		cur, err := s.get(ctx, tx, tenantID, agentID, taskID)
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

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, tenantID, agentID, taskID string) (Lock, error) {
	var l Lock
	err := tx.GetContext(ctx, &l, s.q.getLock, tenantID, agentID, taskID)
	return l, err
}

// exec1 runs a statement that must change exactly one row.
func exec1(ctx context.Context, tx *sqldb.Tx, what, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%s: changed %d rows, want 1 (%v)", what, n, err)
	}
	return nil
}
