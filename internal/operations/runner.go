package operations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Defaults of RunnerConfig's zero fields.
const (
	DefaultBatch    = 200
	DefaultLease    = 30 * time.Second
	DefaultInterval = time.Second
	pendingScan     = 20
)

// RunnerConfig tunes a replica's runner.
type RunnerConfig struct {
	// Holder names this replica in the leases it takes (default: a new random id).
	Holder string
	// Batch is how many runs one transaction acts on.
	Batch int
	// Lease is how long a holder keeps an operation without finishing a batch: a replica
	// that dies leaves its operation to another after it.
	Lease time.Duration
	// Interval is how often Run looks for operations to take.
	Interval time.Duration
	Logger   *slog.Logger
}

// Runner works through running operations, on every replica.
type Runner struct {
	db   *sqldb.DB
	q    *queries
	runs *runs.Service
	cfg  RunnerConfig
}

// NewRunner returns a runner over db.
func NewRunner(db *sqldb.DB, rs *runs.Service, cfg RunnerConfig) *Runner {
	if cfg.Holder == "" {
		cfg.Holder = uuid.NewString()
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{db: db, q: queriesFor(db.Dialect), runs: rs, cfg: cfg}
}

// Run takes and works operations each interval until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.WarnContext(ctx, "bulk operations pass failed", "err", err)
		}
	}
}

type pendingOp struct {
	TenantID    string    `db:"TenantId"`
	OperationID uuid.UUID `db:"OperationId"`
}

// errLeaseLost: another runner holds the operation now (this one's lease passed).
var errLeaseLost = errors.New("the operation's lease was lost")

// Tick takes the operations whose lease has passed (or was never taken) and works each to
// its end; it returns how many it finished. An operation whose lease it loses meanwhile is
// left to its new holder.
func (r *Runner) Tick(ctx context.Context) (int, error) {
	var due []pendingOp
	err := r.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &due, r.q.pending, tx.Dialect.Time(now), pendingScan)
	})
	if err != nil {
		return 0, fmt.Errorf("scan operations: %w", err)
	}
	finished := 0
	var errs []error
	for _, p := range due {
		done, err := r.work(ctx, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("operation %s: %w", p.OperationID, err))
			continue
		}
		if done {
			finished++
		}
	}
	return finished, errors.Join(errs...)
}

// work takes one operation's lease and runs its batches; false without error: another
// runner has it.
func (r *Runner) work(ctx context.Context, p pendingOp) (bool, error) {
	var op Operation
	err := r.db.Write(ctx, sqldb.TenantScope(p.TenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, r.q.take, p.TenantID, p.OperationID, r.cfg.Holder,
			tx.Dialect.Time(now.Add(r.cfg.Lease)), tx.Dialect.Time(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errLeaseLost
		}
		return tx.GetContext(ctx, &op, r.q.get, p.TenantID, p.OperationID)
	})
	if errors.Is(err, errLeaseLost) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take: %w", err)
	}
	for {
		next, finished, err := r.batch(ctx, op)
		if errors.Is(err, errLeaseLost) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if finished {
			return true, nil
		}
		op.Cursor = next
	}
}

type tally struct {
	cancelled, cancelRequested, continued, ended, notEnded, exhausted, notFound, continuedBefore int64
}

// Results stored per matched run (OperationRuns.Result).
const (
	resultCancelled       = "cancelled"
	resultCancelRequested = "cancel_requested"
	resultContinued       = "continued"
	resultEnded           = "skipped:ended"
	resultNotEnded        = "skipped:not_ended"
	resultExhausted       = "skipped:attempts_exhausted"
	resultNotFound        = "skipped:not_found"
	resultContinuedBefore = "skipped:continued_before"
)

type opRun struct {
	Seq   int64     `db:"Seq"`
	RunID uuid.UUID `db:"RunId"`
}

// batch acts on the runs after op.Cursor, at most Batch of them, in one transaction that
// first renews the lease (conditional on the holder and the cursor it read) and last
// advances the cursor: a batch is done whole or not at all.
func (r *Runner) batch(ctx context.Context, op Operation) (int64, bool, error) {
	var (
		next     int64
		finished bool
		wake     bool
	)
	caller := runs.Caller{TenantID: op.TenantID, KeyID: op.CreatedBy}
	err := r.db.Write(ctx, sqldb.TenantScope(op.TenantID), func(tx *sqldb.Tx) error {
		wake = false
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, r.q.hold, op.TenantID, op.OperationID, r.cfg.Holder, op.Cursor,
			tx.Dialect.Time(now.Add(r.cfg.Lease)))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errLeaseLost
		}
		var rows []opRun
		if err := tx.SelectContext(ctx, &rows, r.q.batch, op.TenantID, op.OperationID, op.Cursor, r.cfg.Batch); err != nil {
			return err
		}
		var t tally
		next = op.Cursor
		for _, row := range rows {
			result, moved, err := r.act(ctx, tx, op.Action, caller, row.RunID, &t)
			if err != nil {
				return fmt.Errorf("run %s: %w", row.RunID, err)
			}
			wake = wake || moved
			if _, err := tx.ExecContext(ctx, r.q.setResult, op.TenantID, op.OperationID, row.Seq, result); err != nil {
				return err
			}
			next = row.Seq
		}
		finished = len(rows) < r.cfg.Batch || next >= op.Matched
		var finishedAt any
		if finished {
			finishedAt = tx.Dialect.NullTime(&now)
		}
		_, err = tx.ExecContext(ctx, r.q.advance, op.TenantID, op.OperationID, next, t.cancelled, t.cancelRequested,
			t.continued, t.ended, t.notEnded, t.exhausted, t.notFound, finishedAt, t.continuedBefore)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	if wake {
		r.runs.Wake(op.TenantID)
	}
	return next, finished, nil
}

// act does the operation's action to one run with the runs' own cancel and continue.
func (r *Runner) act(ctx context.Context, tx *sqldb.Tx, action api.BulkAction, c runs.Caller, runID uuid.UUID, t *tally) (string, bool, error) {
	switch action {
	case api.BulkCancel:
		run, did, wake, err := r.runs.CancelTx(ctx, tx, c.TenantID, runID)
		switch {
		case apperr.Is(err, api.CodeNotFound):
			t.notFound++
			return resultNotFound, false, nil
		case err != nil:
			return "", false, err
		case did == runs.CancelEnded:
			t.cancelled++
			return resultCancelled, wake, nil
		case did == runs.CancelRequested:
			t.cancelRequested++
			return resultCancelRequested, false, nil
		case run.State == api.RunEnded:
			t.ended++
			return resultEnded, false, nil
		default:
			// Leased with a cancel already pending: the request stands.
			t.cancelRequested++
			return resultCancelRequested, false, nil
		}
	default:
		_, created, err := r.runs.ContinueTx(ctx, tx, c, runID, runs.Continuation{})
		switch {
		case apperr.Is(err, api.CodeNotFound):
			t.notFound++
			return resultNotFound, false, nil
		case apperr.Is(err, api.CodeAttemptsExhausted):
			t.exhausted++
			return resultExhausted, false, nil
		case apperr.Is(err, api.CodeIllegalTransition):
			t.notEnded++
			return resultNotEnded, false, nil
		case err != nil:
			return "", false, err
		case !created:
			// Continued before (by hand, or another operation): left as it is.
			t.continuedBefore++
			return resultContinuedBefore, false, nil
		}
		t.continued++
		return resultContinued, true, nil
	}
}
