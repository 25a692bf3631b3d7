// Package delegations keeps SubAgentDelegations (DESIGN.md section 5): a holder delegates
// work to a sub-agent by enqueueing a child run in the same transaction as the delegation
// row, and the row's status follows the child run (and its continuations) in the same
// transactions that move it.
package delegations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Delegation is one delegation of an attempt to a sub-agent's child run.
type Delegation struct {
	DelegationID uuid.UUID `db:"DelegationId"`
	AttemptID    uuid.UUID `db:"AttemptId"`
	TenantID     string    `db:"TenantId"`
	ChildRunID   uuid.UUID `db:"ChildRunId"`
	ChildAgentID string    `db:"ChildAgentId"`
	Purpose      string    `db:"Purpose"`
	// Depth is the child run's depth (the parent run's depth + 1).
	Depth int `db:"Depth"`
	// Status follows the child run, or the newest continuation of it.
	Status    api.DelegationStatus `db:"Status"`
	CreatedAt time.Time            `db:"CreatedAt"`
	Version   sqldb.RowVersion     `db:"Version"`
}

// Wire returns the delegation as the API sends it.
func (d Delegation) Wire() api.Delegation {
	return api.Delegation{DelegationID: d.DelegationID, AttemptID: d.AttemptID, ChildRunID: d.ChildRunID,
		ChildAgentID: d.ChildAgentID, Purpose: d.Purpose, Depth: d.Depth, Status: d.Status,
		CreatedAt: api.NewTime(d.CreatedAt)}
}

// StatusOf is the delegation status of a child run in its current state: queued ->
// pending, leased -> running, ended succeeded -> succeeded, ended cancelled -> cancelled,
// any other end (failed, exhausted, deadline) -> failed.
func StatusOf(run runs.Run) api.DelegationStatus {
	switch run.State {
	case api.RunQueued:
		return api.DelegationPending
	case api.RunLeased:
		return api.DelegationRunning
	}
	switch {
	case run.Outcome != nil && *run.Outcome == api.OutcomeSucceeded:
		return api.DelegationSucceeded
	case run.Outcome != nil && *run.Outcome == api.OutcomeCancelled:
		return api.DelegationCancelled
	}
	return api.DelegationFailed
}

// Request is a holder's delegation: why, and the child run's spec, whose AgentID is the
// sub-agent (stored as ChildAgentId) and whose ParentRunID is set to the attempt's run (a
// value given here is ignored).
type Request struct {
	Purpose string
	Child   runs.Spec
}

// Position is a keyset position in CreatedAt, DelegationId order.
type Position struct {
	CreatedAt    time.Time
	DelegationID uuid.UUID
}

// Store keeps delegations. Creates pass the run-lease core's fence and enqueue through it.
type Store struct {
	db  *sqldb.DB
	svc *runs.Service
	q   *queries
}

// NewStore returns the delegation store of db; svc fences holder writes and enqueues the
// child runs.
func NewStore(db *sqldb.DB, svc *runs.Service) *Store {
	return &Store{db: db, svc: svc, q: queriesFor(db.Dialect)}
}

// Create delegates under the holder's fence: in one transaction it enqueues the child run
// (ParentRunId = the attempt's run, so Depth = the parent's + 1) and records the
// delegation, pending. It reports created=false for a repeat: when the child's
// idempotencyKey already names a run for the same child request that is the child of a
// delegation made by an attempt of the same parent run (this attempt, or an earlier one
// whose lease was lost), it returns that delegation. The repeat rule is runs.WriteFenced's:
// the create is tried first, the key is compared only when the child's insert meets it,
// and after the fence refuses only a repeat presented with the same token answers 200.
//
// Errors: NotFound (no such attempt for the tenant), StaleLease, LeaseExpired,
// AttemptEnded, SubjectConflict (the child's subject is the parent run's: the child could
// never be leased while the parent holds the subject), LoopDepth, UnknownProject,
// IdempotencyKeyReused (the key names a run made by another request), and
// SequenceConflict when the idempotencyKey names a run that is no delegated child of this
// run (a plain enqueue, or another run's child): the key is taken, and no delegation can
// be returned for it. Nothing is written when it fails.
func (s *Store) Create(ctx context.Context, c runs.Caller, attemptID uuid.UUID, token int64, r Request) (Delegation, bool, error) {
	out, created, err := runs.WriteFenced(ctx, s.svc, c.TenantID, attemptID, token, runs.FencedWrite[Delegation]{
		What: "create delegation",
		Do: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (Delegation, bool, error) {
			if r.Child.Subject == f.Run.Subject {
				return Delegation{}, false, apperr.New(api.CodeSubjectConflict,
					"the child's subject is the parent run's: it could not be leased while the parent holds it")
			}
			spec := r.Child
			parent := f.Run.RunID
			spec.ParentRunID = &parent
			run, fresh, err := s.svc.EnqueueTx(ctx, tx, c, spec)
			if err != nil {
				return Delegation{}, false, err
			}
			if !fresh {
				// The key named a run already (an earlier create, a concurrent one that
				// committed first, or a purged one): its delegation, if it is this run's.
				d, err := s.repeat(ctx, tx, f.Attempt, run.RunID)
				return d, false, err
			}
			var d Delegation
			err = tx.GetContext(ctx, &d, s.q.insert, insertArgs(tx.Dialect, tx.Dialect.NewID(), attemptID, run, r.Purpose, f.Now)...)
			if err != nil {
				return Delegation{}, false, fmt.Errorf("insert delegation: %w", err)
			}
			return d, true, nil
		},
		Repeat: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (Delegation, error) {
			key := r.Child.IdempotencyKey
			if key == nil {
				return Delegation{}, runs.ErrNoRepeat
			}
			var runID uuid.UUID
			err := tx.GetContext(ctx, &runID, s.q.runByIdempotencyKey, c.TenantID, *key)
			if errors.Is(err, sqldb.ErrNotFound) {
				return Delegation{}, runs.ErrNoRepeat
			}
			if err != nil {
				return Delegation{}, fmt.Errorf("read run by idempotency key: %w", err)
			}
			return s.repeat(ctx, tx, f.Attempt, runID)
		},
	})
	if err != nil {
		return Delegation{}, false, err
	}
	if created {
		s.svc.Woke(c.TenantID)
	}
	return out, created, nil
}

// repeat answers a create whose idempotency key names runID: the delegation of that child
// run when an attempt of a's run made it, else SequenceConflict.
func (s *Store) repeat(ctx context.Context, tx *sqldb.Tx, a attempts.Attempt, runID uuid.UUID) (Delegation, error) {
	conflict := apperr.New(api.CodeSequenceConflict,
		"the child's idempotencyKey already names a run that is not a delegated child of this run")
	d, err := byChildRun(ctx, tx, s.q, a.TenantID, runID)
	if apperr.Is(err, api.CodeNotFound) {
		return Delegation{}, conflict
	}
	if err != nil {
		return Delegation{}, err
	}
	if d.AttemptID != a.AttemptID {
		other, err := attempts.Get(ctx, tx, a.TenantID, d.AttemptID)
		if err != nil {
			return Delegation{}, err
		}
		if other.RunID != a.RunID {
			return Delegation{}, conflict
		}
	}
	return d, nil
}

// Get reads a delegation of the tenant (NotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, id uuid.UUID) (Delegation, error) {
	var out Delegation
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		out, err = s.get(ctx, tx, tenantID, id)
		return err
	})
	return out, err
}

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, tenantID string, id uuid.UUID) (Delegation, error) {
	var d Delegation
	err := tx.GetContext(ctx, &d, s.q.get, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Delegation{}, apperr.New(api.CodeNotFound, "no delegation %s", id)
	}
	if err != nil {
		return Delegation{}, fmt.Errorf("read delegation: %w", err)
	}
	return d, nil
}

func byChildRun(ctx context.Context, tx *sqldb.Tx, q *queries, tenantID string, runID uuid.UUID) (Delegation, error) {
	var d Delegation
	err := tx.GetContext(ctx, &d, q.byChildRun, tenantID, runID)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Delegation{}, apperr.New(api.CodeNotFound, "no delegation of run %s", runID)
	}
	if err != nil {
		return Delegation{}, fmt.Errorf("read delegation of child run: %w", err)
	}
	return d, nil
}

// ListByAttempt lists an attempt's delegations in CreatedAt, DelegationId order. NotFound
// when the attempt is missing or another tenant's.
func (s *Store) ListByAttempt(ctx context.Context, tenantID string, attemptID uuid.UUID, after *Position, limit int) ([]Delegation, error) {
	return attempts.ListOf(ctx, s.db, tenantID, attemptID, "list delegations of attempt", func(tx *sqldb.Tx) ([]Delegation, error) {
		return ForAttempt(ctx, tx, tenantID, attemptID, after, limit)
	})
}

// ListByRun lists the delegations every attempt of a run made, oldest first, at most
// limit, in one read (the run page). A run of another tenant, or none, has none.
func (s *Store) ListByRun(ctx context.Context, tenantID string, runID uuid.UUID, limit int) ([]Delegation, error) {
	ds := []Delegation{}
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &ds, s.q.listByRun, tenantID, runID, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("list delegations of run: %w", err)
	}
	return ds, nil
}

// ForAttempt is ListByAttempt inside the caller's transaction (the attempt timeline),
// without the check that the attempt exists.
func ForAttempt(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, after *Position, limit int) ([]Delegation, error) {
	var afterAt, afterID any
	if after != nil {
		afterAt, afterID = tx.Dialect.Time(after.CreatedAt), after.DelegationID
	}
	ds := []Delegation{}
	if err := tx.SelectContext(ctx, &ds, queriesFor(tx.Dialect).listByAttempt, tenantID, attemptID, afterAt, afterID, limit); err != nil {
		return nil, fmt.Errorf("list delegations of attempt: %w", err)
	}
	return ds, nil
}

// Hooks keep delegations in step with their child runs inside the run-lease core's
// transactions (enqueue, claim, requeue, end, continuation): the delegation of the run,
// or, for a continuation, of the child run its chain started from, takes the run's
// status. A continued child hands its delegation to its continuation this way.
func Hooks() runs.Hooks {
	return runs.Hooks{RunChanged: runChanged}
}

// maxChain bounds the walk up a continuation chain; each continuation spends an attempt,
// and MaxAttempts is at most 1000.
const maxChain = 1024

// runChanged finds the delegation a run's status belongs to, at a cost that does not grow
// with the run's chain unless the chain really may be a delegated one:
//   - a run without a parent run is never delegated: no statement;
//   - a chain's first run is a delegation's child run or not: one seek;
//   - a continuation copies its chain's parent run and subject, so its chain can only be
//     delegated if an attempt of that parent delegated a child with that subject (Create
//     sets the child's parent to the delegating attempt's run): one statement finds those
//     children, and when there is none (a plain child, the common case) that is all;
//   - otherwise the walk up the chain stops at the first of those children it meets (one
//     seek a hop, a delegated chain's length at most).
func runChanged(ctx context.Context, tx *sqldb.Tx, run runs.Run) error {
	if !run.ParentRunID.Valid {
		return nil
	}
	q := queriesFor(tx.Dialect)
	status := StatusOf(run)
	if !run.ContinuedFromRunID.Valid {
		d, err := byChildRun(ctx, tx, q, run.TenantID, run.RunID)
		if apperr.Is(err, api.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return setStatus(ctx, tx, q, d.TenantID, d.DelegationID, d.Status, status)
	}
	var cands []struct {
		DelegationID uuid.UUID            `db:"DelegationId"`
		ChildRunID   uuid.UUID            `db:"ChildRunId"`
		Status       api.DelegationStatus `db:"Status"`
	}
	if err := tx.SelectContext(ctx, &cands, q.delegatedSiblings, run.TenantID, run.ParentRunID.UUID, run.Subject); err != nil {
		return fmt.Errorf("read the parent run's delegations: %w", err)
	}
	if len(cands) == 0 {
		return nil
	}
	prev := run.ContinuedFromRunID
	for hop := 0; prev.Valid && hop < maxChain; hop++ {
		for _, c := range cands {
			if c.ChildRunID == prev.UUID {
				return setStatus(ctx, tx, q, run.TenantID, c.DelegationID, c.Status, status)
			}
		}
		id := prev.UUID
		err := tx.GetContext(ctx, &prev, q.continuedFrom, run.TenantID, id)
		if errors.Is(err, sqldb.ErrNotFound) {
			return nil // the chain's older runs were purged
		}
		if err != nil {
			return fmt.Errorf("read continued run: %w", err)
		}
	}
	return nil
}

// setStatus moves a delegation to status unless it is there already (so a repeat stamps no
// new version).
func setStatus(ctx context.Context, tx *sqldb.Tx, q *queries, tenantID string, id uuid.UUID, from, to api.DelegationStatus) error {
	if from == to {
		return nil
	}
	if _, err := tx.ExecContext(ctx, q.setStatus, tenantID, id, to); err != nil {
		return fmt.Errorf("set delegation status: %w", err)
	}
	return nil
}

// insertArgs is the insert's arguments. The statement only stores its text, so all of it
// goes as Dialect.Text: one declaration list (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, id, attemptID uuid.UUID, child runs.Run, purpose string, now time.Time) []any {
	return []any{id, attemptID, d.Text(child.TenantID), child.RunID, d.Text(child.AgentID), d.Text(purpose), child.Depth,
		d.Text(string(StatusOf(child))), d.Time(now)}
}
