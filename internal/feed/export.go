package feed

import (
	"context"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// An Exporter is a projection whose effect lies outside the database (an OpenTelemetry
// collector): it cannot commit with the position, and it must not hold a write transaction
// while it waits on the network. Its batch is read in a read transaction, sent with no
// transaction open, and only then is the position moved, by a replica that still holds the
// lease and only from the position the batch was read at. A crash between the send and the
// move sends the batch again: an Exporter's output must be the same for the same rows (the
// receiver keeps the last copy), so nothing is lost and a repeat changes nothing.
type Exporter interface {
	// Name keys the exporter's position and lease, as Projector.Name does.
	Name() string
	// Read reads, through tx, the committed changes whose Version v is after < v < ceiling,
	// or a bounded prefix of them in Version order, and returns what Send will send and the
	// last version it covers completely (after when there was nothing).
	Read(ctx context.Context, tx *sqldb.Tx, after, ceiling sqldb.RowVersion) (batch any, through sqldb.RowVersion, err error)
	// Send delivers a batch Read returned; an error leaves the position where it was, to be
	// read and sent again after the interval.
	Send(ctx context.Context, batch any) error
}

// ExportRunner runs one Exporter, as Runner runs a Projector.
type ExportRunner struct {
	db   *sqldb.DB
	e    Exporter
	q    *queries
	opts Options
}

// NewExportRunner returns the runner of e over db.
func NewExportRunner(db *sqldb.DB, e Exporter, o Options) *ExportRunner {
	return &ExportRunner{db: db, e: e, q: queriesFor(db.Dialect), opts: o.withDefaults()}
}

// Step takes (or renews) the lease, reads one batch past the position, sends it and moves
// the position. Three short transactions; none is open while the batch is sent.
func (r *ExportRunner) Step(ctx context.Context) (Step, error) {
	var st Step
	err := r.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		st = Step{}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		held, pos, err := takeLease(ctx, tx, r.q, r.e.Name(), r.opts, now)
		st.Held, st.From, st.Through = held, pos, pos
		return err
	})
	if err != nil || !st.Held {
		return st, err
	}
	var (
		batch   any
		ceiling sqldb.RowVersion
	)
	err = r.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		if err := tx.GetContext(ctx, &ceiling, r.q.ceiling); err != nil {
			return fmt.Errorf("read the committed end of the feed: %w", err)
		}
		if ceiling <= st.From+1 {
			return nil
		}
		var err error
		batch, st.Through, err = r.e.Read(ctx, tx, st.From, ceiling)
		if err != nil {
			return fmt.Errorf("read %s's batch: %w", r.e.Name(), err)
		}
		if st.Through <= st.From || st.Through >= ceiling {
			return fmt.Errorf("%w (%s: after %d, ceiling %d, answered %d)", ErrNoProgress, r.e.Name(), st.From, ceiling, st.Through)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if st.Through > st.From {
		sendCtx, cancel := context.WithTimeout(ctx, r.opts.Lease/2)
		err := r.e.Send(sendCtx, batch)
		cancel()
		if err != nil {
			st.Through = st.From
			return st, fmt.Errorf("send %s's batch: %w", r.e.Name(), err)
		}
	}
	st.CaughtUp = st.Through+1 >= ceiling
	err = r.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var caught any
		if st.CaughtUp {
			caught = tx.Dialect.Time(now)
		}
		d := tx.Dialect
		res, err := tx.ExecContext(ctx, r.q.advanceFrom, r.e.Name(), d.Version(st.Through), caught, d.Time(now),
			d.Version(st.From), r.opts.Holder)
		if err != nil {
			return fmt.Errorf("store the position: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			// Another replica took the lease over while this one sent: it reads from the
			// stored position and sends the same spans again, which changes nothing.
			st.Held = false
			return err
		}
		return nil
	})
	return st, err
}

// CatchUp runs steps until every change committed before the call has been sent (tests
// and tools). It fails when a send fails or another replica holds the lease.
func (r *ExportRunner) CatchUp(ctx context.Context) error { return catchUp(ctx, r.e.Name(), r.Step) }

// Run steps the exporter until ctx ends. A failed send (the collector down) backs off,
// doubling from the interval to a minute, so a collector that is away costs a request a
// minute and loses nothing: the position waits, and the database is the backlog.
func (r *ExportRunner) Run(ctx context.Context) {
	run(ctx, r.opts, "exporter", r.e.Name(), r.Step, time.Minute)
}
