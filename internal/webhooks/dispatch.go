package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Delivery limits (DESIGN.md section 5b).
const (
	// SendTimeout bounds one try: connect, send and read the answer.
	SendTimeout = 10 * time.Second
	// LeaseFor is how long a try holds its delivery: past it, another replica may try it
	// (with the same webhook-id). It exceeds SendTimeout with room for the two writes.
	LeaseFor = 30 * time.Second
	// MaxResponseRead is how much of an answer's body is read.
	MaxResponseRead = 1024
	// DefaultPerTenant caps one tenant's tries in flight on a replica.
	DefaultPerTenant = 4
	// DefaultWorkers caps all tries in flight on a replica.
	DefaultWorkers = 32
	// DefaultInterval is how often a replica looks for due deliveries.
	DefaultInterval = time.Second
	backoffBase     = 5 * time.Second
	backoffCap      = time.Hour
)

// DispatcherConfig tunes a replica's dispatcher (zero fields take the defaults).
type DispatcherConfig struct {
	PerTenant int
	Workers   int
	Interval  time.Duration
	Logger    *slog.Logger
	// Jitter returns a factor in [0.8, 1.2) for a retry's delay (nil: random); tests pin it.
	Jitter func() float64
}

// Dispatcher sends due deliveries. Every replica runs one; they share nothing but the
// database: a delivery is leased by a conditional write (lease), so one replica at a time
// tries it, and the result is recorded only by the lease's holder.
type Dispatcher struct {
	s      *Store
	cfg    DispatcherConfig
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	inflight map[string]int
	total    int
	wg       sync.WaitGroup

	outcomes *prometheus.CounterVec
	oldest   prometheus.Gauge
}

// NewDispatcher returns the dispatcher of s's database.
func NewDispatcher(s *Store, cfg DispatcherConfig) *Dispatcher {
	if cfg.PerTenant <= 0 {
		cfg.PerTenant = DefaultPerTenant
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return 0.8 + 0.4*rand.Float64() }
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           s.newDialer().DialContext,
		TLSHandshakeTimeout:   SendTimeout,
		ResponseHeaderTimeout: SendTimeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
	}
	return &Dispatcher{s: s, cfg: cfg, log: log, inflight: map[string]int{},
		client: &http.Client{Transport: tr, Timeout: SendTimeout,
			// A redirect is an answer, never followed: its target was never checked.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledger_webhook_deliveries_total",
			Help: "Webhook delivery tries on this replica by outcome (delivered, retry, failed, disabled, lost_lease)."}, []string{"outcome"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ledger_webhook_oldest_pending_seconds",
			Help: "Age of the oldest pending webhook delivery, as of this replica's last look."}),
	}
}

// Collectors are the dispatcher's metrics.
func (d *Dispatcher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.outcomes, d.oldest}
}

// Run looks for due deliveries every interval until ctx ends, then waits for its tries.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	n := 0
	var purged time.Time
	for {
		select {
		case <-ctx.Done():
			d.wg.Wait()
			return
		case <-t.C:
			if _, err := d.Tick(ctx); err != nil && ctx.Err() == nil {
				d.log.WarnContext(ctx, "webhook dispatch failed", "err", err)
			}
			if n++; n%15 == 1 {
				_ = d.ObservePending(ctx)
			}
			if time.Since(purged) > time.Hour {
				purged = time.Now()
				if k, err := PurgeDelivered(ctx, d.s.db, DeliveredRetention); err != nil && ctx.Err() == nil {
					d.log.WarnContext(ctx, "purging delivered webhook deliveries failed", "err", err)
				} else if k > 0 {
					d.log.InfoContext(ctx, "purged delivered webhook deliveries", "count", k)
				}
			}
		}
	}
}

// Wait waits for the tries Tick started.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// DeliverDue starts every due try it may and waits for them (tests and tools).
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	n, err := d.Tick(ctx)
	d.Wait()
	return n, err
}

type dueRow struct {
	TenantID   string    `db:"TenantId"`
	DeliveryID uuid.UUID `db:"DeliveryId"`
	Attempts   int       `db:"Attempts"`
}

// Tick leases due deliveries and starts a try of each, within the caps, without waiting
// for them; it returns how many it started. Tenants at their cap are left out of the due
// read, so one tenant's slow endpoint never fills the read with rows this replica cannot
// start, and another tenant's deliveries go out past it.
func (d *Dispatcher) Tick(ctx context.Context) (int, error) {
	free, busy := d.capacity()
	if free <= 0 {
		return 0, nil
	}
	busyJSON, _ := json.Marshal(busy)
	var due []dueRow
	err := d.s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &due, d.s.q.due, tx.Dialect.Time(now), free*2, tx.Dialect.JSON(string(busyJSON)))
	})
	if err != nil {
		return 0, fmt.Errorf("read due webhook deliveries: %w", err)
	}
	started := 0
	for _, r := range due {
		if !d.take(r.TenantID) {
			continue
		}
		job, ok, err := d.lease(ctx, r)
		if err != nil || !ok {
			d.done(r.TenantID)
			if err != nil {
				return started, err
			}
			continue
		}
		started++
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.done(r.TenantID)
			d.try(ctx, job)
		}()
	}
	return started, nil
}

// capacity is how many tries this replica may start, and the tenants at their cap.
func (d *Dispatcher) capacity() (int, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	busy := []string{}
	for t, n := range d.inflight {
		if n >= d.cfg.PerTenant {
			busy = append(busy, t)
		}
	}
	return d.cfg.Workers - d.total, busy
}

func (d *Dispatcher) take(tenantID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.total >= d.cfg.Workers || d.inflight[tenantID] >= d.cfg.PerTenant {
		return false
	}
	d.inflight[tenantID]++
	d.total++
	return true
}

func (d *Dispatcher) done(tenantID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total--
	if d.inflight[tenantID]--; d.inflight[tenantID] <= 0 {
		delete(d.inflight, tenantID)
	}
}

// job is a leased try: the delivery, its endpoint (nil if deleted) and the lease's number.
type job struct {
	del      Delivery
	ep       *Endpoint
	attempts int
	now      time.Time
}

// lease takes the delivery for one try if it is still due with the attempts seen, and
// reads it with its endpoint.
func (d *Dispatcher) lease(ctx context.Context, r dueRow) (job, bool, error) {
	var (
		j  job
		ok bool
	)
	err := d.s.db.Write(ctx, sqldb.TenantScope(r.TenantID), func(tx *sqldb.Tx) error {
		ok = false
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, d.s.q.lease, r.TenantID, r.DeliveryID, r.Attempts, tx.Dialect.Time(now), tx.Dialect.Time(now.Add(LeaseFor)))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err // another replica leased it first
		}
		del, err := d.s.getDelivery(ctx, tx, r.TenantID, r.DeliveryID)
		if err != nil {
			return err
		}
		j = job{del: del, attempts: r.Attempts + 1, now: now}
		var ep Endpoint
		switch err := tx.GetContext(ctx, &ep, d.s.q.getEndpoint, r.TenantID, del.EndpointName); {
		case errors.Is(err, sqldb.ErrNotFound):
		case err != nil:
			return err
		default:
			j.ep = &ep
		}
		ok = true
		return nil
	})
	if err != nil {
		return job{}, false, fmt.Errorf("lease webhook delivery %s: %w", r.DeliveryID, err)
	}
	return j, ok, nil
}

// result is how a try ended.
type result struct {
	code    *int
	err     string
	gone    bool // 410: the endpoint asks to be disabled
	success bool
	final   bool // no later try can succeed (the endpoint was deleted)
}

// try sends the leased delivery once and records what happened.
func (d *Dispatcher) try(ctx context.Context, j job) {
	var res result
	switch {
	case j.ep == nil:
		res = result{err: "the webhook was deleted", final: true}
	case !j.ep.Active:
		res = result{err: "the webhook is inactive"}
	default:
		res = d.send(ctx, j)
	}
	if ctx.Err() != nil {
		// Shutting down: the try is left unrecorded, and its lease runs out in LeaseFor for
		// another replica (or this one restarted) to send it again with the same webhook-id.
		return
	}
	if err := d.record(ctx, j, res); err != nil && ctx.Err() == nil {
		d.log.WarnContext(ctx, "recording a webhook delivery failed", "delivery", j.del.DeliveryID, "err", err)
	}
}

func (d *Dispatcher) send(ctx context.Context, j job) result {
	body := []byte(j.del.Payload)
	secrets := []string{j.ep.Secret}
	if j.ep.PreviousSecret != nil && j.ep.PreviousSecretUntil != nil && j.now.Before(*j.ep.PreviousSecretUntil) {
		secrets = append(secrets, *j.ep.PreviousSecret)
	}
	id := j.del.DeliveryID.String()
	sig, err := signatures(secrets, id, j.now, body)
	if err != nil {
		return result{err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.ep.URL, bytes.NewReader(body))
	if err != nil {
		return result{err: "bad url: " + err.Error()}
	}
	setHeaders(req.Header, id, j.now, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, errRefusedTarget) {
			msg = errRefusedTarget.Error()
		}
		return result{err: truncate(msg, 256)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseRead))
	code := resp.StatusCode
	r := result{code: &code, success: code >= 200 && code < 300, gone: code == http.StatusGone}
	if !r.success {
		r.err = fmt.Sprintf("answered %d", code)
	}
	return r
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Backoff is the delay before the try after the n-th (from 1): 5 s doubling to a cap of an
// hour, times a jitter factor.
func Backoff(n int, jitter float64) time.Duration {
	exp := math.Min(float64(backoffBase)*math.Pow(2, float64(n-1)), float64(backoffCap))
	return time.Duration(exp * jitter).Truncate(time.Millisecond)
}

// record writes the try's result if this replica still holds the lease, and disables the
// endpoint on a 410.
func (d *Dispatcher) record(ctx context.Context, j job, r result) error {
	outcome := ""
	err := d.s.db.Write(ctx, sqldb.TenantScope(j.del.TenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		status, next, delivered := api.DeliveryPending, now.Add(Backoff(j.attempts, d.cfg.Jitter())), any(nil)
		switch {
		case r.success:
			status, next, delivered = api.DeliveryDelivered, now, tx.Dialect.Time(now)
		case r.gone || r.final || next.After(j.del.RetryUntil):
			status, next = api.DeliveryFailed, now
		}
		var code any
		if r.code != nil {
			code = *r.code
		}
		res, err := tx.ExecContext(ctx, d.s.q.record, j.del.TenantID, j.del.DeliveryID, j.attempts, string(status),
			tx.Dialect.Time(next), code, tx.Dialect.NullText(nilIfEmpty(r.err)), delivered)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			outcome = "lost_lease"
			return nil
		}
		outcome = map[api.DeliveryStatus]string{api.DeliveryPending: "retry", api.DeliveryDelivered: "delivered", api.DeliveryFailed: "failed"}[status]
		if r.gone && j.ep != nil {
			outcome = "disabled"
			if _, err := tx.ExecContext(ctx, d.s.q.disable, j.del.TenantID, j.ep.Name, tx.Dialect.Time(now)); err != nil {
				return err
			}
			tx.AfterCommit(func() { d.s.subs.forget(j.del.TenantID) })
		}
		return nil
	})
	if err == nil {
		d.outcomes.WithLabelValues(outcome).Inc()
	}
	return err
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ObservePending sets the oldest-pending gauge from one read of the pending backlog.
func (d *Dispatcher) ObservePending(ctx context.Context) error {
	var oldest sqldb.NullTime
	var now time.Time
	err := d.s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		var err error
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		return tx.GetContext(ctx, &oldest, d.s.q.oldestPending)
	})
	if err != nil {
		return fmt.Errorf("read the oldest pending webhook delivery: %w", err)
	}
	if oldest.Valid {
		d.oldest.Set(now.Sub(oldest.Time).Seconds())
	} else {
		d.oldest.Set(0)
	}
	return nil
}

// DeliveredRetention is how long a delivered row is kept (failed ones stay for a redeliver).
const DeliveredRetention = 72 * time.Hour

// PurgeBatch bounds one purge statement.
const PurgeBatch = 2000

// PurgeDelivered deletes rows delivered more than keep ago (by the database clock), across
// tenants, in bounded batches (one autocommit statement each), and returns how many.
func PurgeDelivered(ctx context.Context, db *sqldb.DB, keep time.Duration) (int, error) {
	q := queriesFor(db.Dialect)
	total := 0
	for {
		var n int64
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, q.purge, tx.Dialect.Time(now.Add(-keep)), PurgeBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("purge delivered webhook deliveries: %w", err)
		}
		if n < PurgeBatch || ctx.Err() != nil {
			return total, nil
		}
	}
}
