package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Scheduler defaults.
const (
	// DefaultInterval is how often a replica's scheduler looks for due schedules.
	DefaultInterval = time.Second
	// dueBatch bounds one pass's scan; what is left is the next pass's.
	dueBatch = 200
	// maxCatchupWalk bounds the firings one catch-up counts one by one (a year of a
	// once-a-minute schedule is about 526,000): past it the rest are skipped uncounted.
	maxCatchupWalk = 1_000_000
)

// Scheduler fires due schedules. Every replica runs one and none leads: a firing is one
// conditional write on the schedule's NextFireAt that only one scheduler can win, in the
// transaction that enqueues its run with the idempotency key FiringKey.
type Scheduler struct {
	db       *sqldb.DB
	q        *queries
	runs     *runs.Service
	log      *slog.Logger
	interval time.Duration

	firings  prometheus.Counter
	skips    *prometheus.CounterVec
	lateness prometheus.Histogram
}

// NewScheduler returns the scheduler of db, looking every interval (0: DefaultInterval).
func NewScheduler(db *sqldb.DB, rs *runs.Service, interval time.Duration, log *slog.Logger) *Scheduler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if log == nil {
		log = slog.Default()
	}
	return &Scheduler{db: db, q: queriesFor(db.Dialect), runs: rs, log: log, interval: interval,
		firings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ledger_schedule_firings_total", Help: "Schedule firings that enqueued a run (on this replica).",
		}),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ledger_schedule_skips_total",
			Help: "Schedule firings skipped (on this replica), by reason: overlap (the previous run was live), catchup (older than catchupSeconds).",
		}, []string{"reason"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ledger_schedule_lateness_seconds", Help: "How long after its fire time a firing enqueued its run.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
	}
}

// Collectors are the scheduler's metric families, for the server's registry.
func (s *Scheduler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.firings, s.skips, s.lateness}
}

// Run fires due schedules every interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler pass failed", "err", err)
		}
	}
}

// TickResult counts what one pass did.
type TickResult struct {
	Fired, SkippedOverlap, SkippedCatchup int
	Lost                                  int // firings another scheduler took first
}

type due struct {
	TenantID   string    `db:"TenantId"`
	ScheduleID string    `db:"ScheduleId"`
	NextFireAt time.Time `db:"NextFireAt"`
}

// Tick fires every schedule that is due now, across tenants. A firing that fails is logged
// and left due for the next pass; it cannot hold back the others.
func (s *Scheduler) Tick(ctx context.Context) (TickResult, error) {
	var (
		res  TickResult
		list []due
	)
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &list, s.q.due, tx.Dialect.Time(now), dueBatch)
	})
	if err != nil {
		return res, fmt.Errorf("find due schedules: %w", err)
	}
	for _, d := range list {
		f, err := s.fire(ctx, d)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			s.log.WarnContext(ctx, "firing failed; due again at the next pass", "tenant", d.TenantID, "schedule", d.ScheduleID, "err", err)
			continue
		}
		res.Fired += f.fired
		res.SkippedOverlap += f.overlap
		res.SkippedCatchup += int(f.catchup)
		if f.lost {
			res.Lost++
		}
	}
	return res, nil
}

type fired struct {
	fired, overlap int
	catchup        int64
	lost           bool
	lateness       time.Duration
}

// fire takes one due firing of d's schedule: the firings older than catchupSeconds are
// skipped and counted, the newest due one fires (or is skipped while the previous run is
// live and overlap is skip), and NextFireAt moves past now's firing, all in one transaction
// whose first write is the conditional one on the NextFireAt the scan saw.
func (s *Scheduler) fire(ctx context.Context, d due) (fired, error) {
	var out fired
	err := s.db.Write(ctx, sqldb.TenantScope(d.TenantID), func(tx *sqldb.Tx) error {
		out = fired{}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var sc Schedule
		if err := tx.GetContext(ctx, &sc, s.q.get, d.TenantID, d.ScheduleID); err != nil {
			if errors.Is(err, sqldb.ErrNotFound) {
				out.lost = true // deleted meanwhile
				return nil
			}
			return err
		}
		if sc.NextFireAt == nil || !sc.NextFireAt.Equal(d.NextFireAt) {
			out.lost = true // fired, paused or rescheduled meanwhile
			return nil
		}
		cr, errs := ParseCron(sc.Cron, sc.Timezone)
		if errs != nil {
			return fmt.Errorf("stored schedule does not parse: %v", errs)
		}
		at := d.NextFireAt
		horizon := now.Add(-time.Duration(sc.CatchupSeconds) * time.Second)
		for at.Before(horizon) && !at.IsZero() && out.catchup < maxCatchupWalk {
			out.catchup++
			at = cr.Next(at)
		}
		if !at.IsZero() && at.Before(horizon) {
			at = cr.Next(horizon.Add(-time.Millisecond)) // past the walk's bound: uncounted
		}
		next, fireNow := at, false
		if !at.IsZero() && !at.After(now) {
			next = cr.Next(at)
			fireNow = true
			if api.ScheduleOverlap(sc.Overlap) == api.OverlapSkip && sc.LastRunID.Valid {
				live, err := s.runs.LiveTx(ctx, tx, d.TenantID, sc.LastRunID.UUID)
				if err != nil {
					return err
				}
				if live {
					fireNow, out.overlap = false, 1
				}
			}
		}
		var nextArg, lastArg any
		if !next.IsZero() {
			nextArg = tx.Dialect.NullTime(&next)
		}
		if fireNow {
			out.fired = 1
			lastArg = tx.Dialect.NullTime(&at)
		}
		res, err := tx.ExecContext(ctx, s.q.advance, d.TenantID, d.ScheduleID, tx.Dialect.Time(d.NextFireAt), nextArg,
			out.catchup, out.overlap, out.fired, lastArg)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			out = fired{lost: true}
			return nil
		}
		if !fireNow {
			return nil
		}
		var spec api.RunSpec
		if err := json.Unmarshal([]byte(sc.RunSpec), &spec); err != nil {
			return fmt.Errorf("stored run spec: %w", err)
		}
		rs := runs.SpecOf(spec)
		key := FiringKey(sc.ScheduleID, at)
		rs.IdempotencyKey = &key
		r, _, err := s.runs.EnqueueTx(ctx, tx, runs.Caller{TenantID: d.TenantID, KeyID: sc.UpdatedBy}, rs)
		if err != nil {
			if _, ok := apperr.As(err); ok {
				// The run cannot be enqueued (its project went, or the key names another
				// request's run): the firing is spent and counted as skipped, not retried
				// forever.
				s.log.WarnContext(ctx, "schedule firing refused", "tenant", d.TenantID, "schedule", sc.ScheduleID, "fire_at", at, "err", err)
				return errRefused
			}
			return err
		}
		out.lateness = now.Sub(at)
		_, err = tx.ExecContext(ctx, s.q.setLastRun, d.TenantID, d.ScheduleID, r.RunID)
		return err
	})
	if errors.Is(err, errRefused) {
		return s.spend(ctx, d)
	}
	if err != nil {
		return fired{}, err
	}
	s.observe(d.TenantID, out)
	return out, nil
}

// errRefused rolls back a firing whose run the enqueue refused, so spend can move past it.
var errRefused = errors.New("firing refused")

// spend moves a refused firing's schedule past it, counting it with the catch-up skips.
func (s *Scheduler) spend(ctx context.Context, d due) (fired, error) {
	out := fired{catchup: 1}
	err := s.db.Write(ctx, sqldb.TenantScope(d.TenantID), func(tx *sqldb.Tx) error {
		var sc Schedule
		if err := tx.GetContext(ctx, &sc, s.q.get, d.TenantID, d.ScheduleID); err != nil {
			return err
		}
		cr, errs := ParseCron(sc.Cron, sc.Timezone)
		if errs != nil {
			return fmt.Errorf("stored schedule does not parse: %v", errs)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var nextArg any
		if next := cr.Next(now); !next.IsZero() {
			nextArg = tx.Dialect.NullTime(&next)
		}
		_, err = tx.ExecContext(ctx, s.q.advance, d.TenantID, d.ScheduleID, tx.Dialect.Time(d.NextFireAt), nextArg, 1, 0, 0, nil)
		return err
	})
	if err != nil {
		return fired{}, err
	}
	s.observe(d.TenantID, out)
	return out, nil
}

func (s *Scheduler) observe(tenantID string, f fired) {
	if f.fired > 0 {
		s.firings.Add(float64(f.fired))
		s.lateness.Observe(f.lateness.Seconds())
		s.runs.Woke(tenantID)
	}
	if f.overlap > 0 {
		s.skips.WithLabelValues("overlap").Add(float64(f.overlap))
	}
	if f.catchup > 0 {
		s.skips.WithLabelValues("catchup").Add(float64(f.catchup))
	}
}
