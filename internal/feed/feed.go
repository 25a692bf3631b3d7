// Package feed runs projectors of the committed change feed (DESIGN.md sections 5a and 5b):
// what history, insights, the OTLP export and webhook events need is derived off the write
// path from the rows a transaction committed, in rowversion order.
//
// A Projector is given, inside one write transaction, the range of versions it has not yet
// applied, capped below the lowest version that may still be uncommitted (SQL Server:
// MIN_ACTIVE_ROWVERSION(); SQLite: writers are serial, so every stamped version is
// committed), applies at most one bounded batch of it and says how far it got. The Runner
// stores that position in FeedProjectors in the same transaction, so a crash loses nothing
// and repeats nothing: the next replica to run the projector starts where the last commit
// left it. One replica at a time runs a projector: the transaction first takes the
// projector's row (Holder, LeaseUntil), which a live lease of another replica refuses, and
// keeps it locked until it commits, so two replicas never apply the same range even at a
// lease's expiry. The Collector exports each projector's lag in /metrics.
package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Projector is one projection of the change feed. Implementations keep no state of their
// own between calls: everything they derive lives in the database, written through tx.
type Projector interface {
	// Name keys the projector's position and lease (at most 64 characters, stable across
	// releases: a new name starts again from the beginning of the feed).
	Name() string
	// Project applies, through tx, the committed changes whose Version v is after < v <
	// ceiling, or a prefix of them in Version order, and returns the last version it
	// applied completely (after when it applied none; ceiling-1 when it applied all). It
	// must bound its own work per call (a batch) and must tolerate seeing a row again with
	// a later Version (a row changes many times).
	Project(ctx context.Context, tx *sqldb.Tx, after, ceiling sqldb.RowVersion) (sqldb.RowVersion, error)
}

// Defaults of Options.
const (
	DefaultLease    = 30 * time.Second
	DefaultInterval = time.Second
)

// Options say who runs a projector and how often.
type Options struct {
	// Holder names this replica in the lease (a random id per process is right).
	Holder string
	// Lease is how long a step's lease lasts without a renewal (0: DefaultLease). Another
	// replica takes the projector over once it has passed.
	Lease time.Duration
	// Interval is the pause between steps once the projector has caught up (0:
	// DefaultInterval). A step that applied a full batch is followed by the next at once.
	Interval time.Duration
	// Log receives failed steps (nil: slog.Default()).
	Log *slog.Logger
}

// Runner runs one projector.
type Runner struct {
	db   *sqldb.DB
	p    Projector
	q    *queries
	opts Options
}

// NewRunner returns the runner of p over db.
func NewRunner(db *sqldb.DB, p Projector, o Options) *Runner {
	return &Runner{db: db, p: p, q: queriesFor(db.Dialect), opts: o.withDefaults()}
}

// withDefaults fills the options left zero.
func (o Options) withDefaults() Options {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// Step is what one step did.
type Step struct {
	// Held: this replica held the lease and ran the projector (false: another holds it).
	Held bool
	// From and Through: the position before and after the step.
	From, Through sqldb.RowVersion
	// CaughtUp: the step reached the committed end of the feed as it stood when the step
	// began.
	CaughtUp bool
}

// ErrNoProgress is returned by a step whose projector applied nothing although committed
// changes wait: a projector that cannot make progress would otherwise spin silently.
var ErrNoProgress = errors.New("feed: the projector applied nothing of a non-empty range")

// Step runs the projector once: takes (or renews) the lease, applies one batch and moves
// the position, all in one transaction.
func (r *Runner) Step(ctx context.Context) (Step, error) {
	var st Step
	err := r.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		st = Step{}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		d := tx.Dialect
		held, pos, err := takeLease(ctx, tx, r.q, r.p.Name(), r.opts, now)
		if err != nil || !held {
			return err // another replica holds it
		}
		st.Held = true
		var ceiling sqldb.RowVersion
		if err := tx.GetContext(ctx, &ceiling, r.q.ceiling); err != nil {
			return fmt.Errorf("read the committed end of the feed: %w", err)
		}
		st.From, st.Through = pos, pos
		if ceiling > pos+1 {
			through, err := r.p.Project(ctx, tx, pos, ceiling)
			if err != nil {
				return fmt.Errorf("project %s: %w", r.p.Name(), err)
			}
			if through <= pos || through >= ceiling {
				return fmt.Errorf("%w (%s: after %d, ceiling %d, answered %d)", ErrNoProgress, r.p.Name(), pos, ceiling, through)
			}
			st.Through = through
		}
		st.CaughtUp = st.Through+1 >= ceiling
		var caught any
		if st.CaughtUp {
			caught = d.Time(now)
		}
		if _, err := tx.ExecContext(ctx, r.q.advance, r.p.Name(), d.Version(st.Through), caught, d.Time(now)); err != nil {
			return fmt.Errorf("store the position: %w", err)
		}
		return nil
	})
	return st, err
}

// takeLease makes the projector's row when it has none, takes or renews its lease for
// holder (held false: another replica's lease is live) and reads its position.
func takeLease(ctx context.Context, tx *sqldb.Tx, q *queries, name string, o Options, now time.Time) (bool, sqldb.RowVersion, error) {
	d := tx.Dialect
	if _, err := tx.ExecContext(ctx, q.ensure, name, d.Time(now)); err != nil {
		return false, 0, fmt.Errorf("create the projector's row: %w", err)
	}
	res, err := tx.ExecContext(ctx, q.lease, name, o.Holder, d.Time(now), d.Time(now.Add(o.Lease)))
	if err != nil {
		return false, 0, fmt.Errorf("take the lease: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, 0, err
	}
	var pos sqldb.RowVersion
	if err := tx.GetContext(ctx, &pos, q.position, name); err != nil {
		return false, 0, fmt.Errorf("read the position: %w", err)
	}
	return true, pos, nil
}

// CatchUp runs steps until the projector has applied every change committed before the
// call (tests and tools; the service uses Run). It fails when another replica holds the
// lease.
func (r *Runner) CatchUp(ctx context.Context) error { return catchUp(ctx, r.p.Name(), r.Step) }

// Run steps the projector until ctx ends: at once again after a step that did not catch
// up, else after the interval. A failed step is logged and tried again after the interval.
func (r *Runner) Run(ctx context.Context) {
	run(ctx, r.opts, "projector", r.p.Name(), r.Step, r.opts.Interval)
}

// catchUp runs step until a step reaches the committed end of the feed.
func catchUp(ctx context.Context, name string, step func(context.Context) (Step, error)) error {
	for {
		st, err := step(ctx)
		if err != nil {
			return err
		}
		if !st.Held {
			return fmt.Errorf("feed: %s is leased by another replica", name)
		}
		if st.CaughtUp {
			return nil
		}
	}
}

// run steps until ctx ends: at once again after a step that did not catch up, else after
// the interval. A failed step is logged and tried again after a wait that starts at the
// interval and doubles, up to maxWait, while steps keep failing.
func run(ctx context.Context, o Options, what, name string, step func(context.Context) (Step, error), maxWait time.Duration) {
	backoff := o.Interval
	for {
		st, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := o.Interval
		switch {
		case err != nil:
			o.Log.WarnContext(ctx, "feed "+what+" step failed", what, name, "err", err, "retry_in", backoff)
			wait, backoff = backoff, min(2*backoff, max(maxWait, o.Interval))
		case st.Held && !st.CaughtUp:
			wait, backoff = 0, o.Interval
		default:
			backoff = o.Interval
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// Status is a projector's state as the database holds it.
type Status struct {
	Name string
	// Position is the last version applied; Head the last committed version.
	Position, Head sqldb.RowVersion
	// CaughtUpAt: every change committed before it has been applied (zero: never yet).
	CaughtUpAt time.Time
	// Now is the database's time of the read.
	Now time.Time
}

// Behind is how many versions wait to be applied.
func (s Status) Behind() uint64 {
	if s.Head <= s.Position {
		return 0
	}
	return uint64(s.Head - s.Position)
}

// Lag is how long changes may have waited: 0 when nothing waits, else the time since the
// projector last caught up.
func (s Status) Lag() time.Duration {
	if s.Behind() == 0 || s.CaughtUpAt.IsZero() {
		return 0
	}
	return max(s.Now.Sub(s.CaughtUpAt), 0)
}

type statusRow struct {
	Name       string           `db:"Name"`
	Position   sqldb.RowVersion `db:"Position"`
	CaughtUpAt sqldb.NullTime   `db:"CaughtUpAt"`
}

// Statuses reads every projector's status. scope is the caller's (a tenant's read sees the
// table too: it holds no tenant data).
func Statuses(ctx context.Context, db *sqldb.DB) ([]Status, error) {
	q := queriesFor(db.Dialect)
	var out []Status
	err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		out = out[:0]
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var ceiling sqldb.RowVersion
		if err := tx.GetContext(ctx, &ceiling, q.ceiling); err != nil {
			return fmt.Errorf("read the committed end of the feed: %w", err)
		}
		var rows []statusRow
		if err := tx.SelectContext(ctx, &rows, q.statuses); err != nil {
			return fmt.Errorf("read projector positions: %w", err)
		}
		for _, r := range rows {
			s := Status{Name: r.Name, Position: r.Position, Now: now}
			if ceiling > 0 {
				s.Head = ceiling - 1
			}
			if r.CaughtUpAt.Valid {
				s.CaughtUpAt = r.CaughtUpAt.Time
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// StatusOf reads one projector's status; ok is false when it has never run.
func StatusOf(ctx context.Context, db *sqldb.DB, name string) (Status, bool, error) {
	all, err := Statuses(ctx, db)
	if err != nil {
		return Status{}, false, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, true, nil
		}
	}
	return Status{}, false, nil
}

// ReadBatch reads a bounded batch of the changes committed after `after`, for a projector
// or an exporter. read(upTo, limit) reads, afresh on every call, every source's rows v
// with after < v < upTo, at most limit of each, and returns upTo-1 cut to before the last
// version of any source that came back full (that version may go on past the batch).
// When the cut leaves nothing (a full batch of one version: on SQLite one statement stamps
// all the rows it writes alike), ReadBatch reads that version whole. It returns the last
// version the batch read covers completely.
func ReadBatch(after, ceiling sqldb.RowVersion, limit int, read func(upTo sqldb.RowVersion, limit int) (sqldb.RowVersion, error)) (sqldb.RowVersion, error) {
	through, err := read(ceiling, limit)
	if err != nil || through > after {
		return through, err
	}
	if _, err := read(after+2, 1<<30); err != nil {
		return 0, err
	}
	return after + 1, nil
}
