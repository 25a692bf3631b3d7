// Package metrics is the service's domain metrics in Prometheus form (DESIGN.md section 8,
// prefix ledger_): the live work read from the database at scrape time through a short
// cache, and counters the lease core, the database layer and the HTTP layer feed through
// their observer hooks. A tenant label is added only when asked for, since every tenant
// multiplies the series.
package metrics

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/overview"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/web"
)

// DefaultCacheTTL is how long one database read serves scrapes: a scrape storm costs at
// most one read per period on each replica.
const DefaultCacheTTL = 5 * time.Second

// Options says how to label and cache.
type Options struct {
	// TenantLabels adds a tenant label to the per-tenant families (--metrics-tenant-labels).
	TenantLabels bool
	// CacheTTL is how long a database read of the live counts is reused (0: DefaultCacheTTL).
	CacheTTL time.Duration
	// Logger receives failed reads (nil: slog.Default()).
	Logger *slog.Logger
}

// Metrics holds the families. It implements runs.Observer and sqldb.Observer, and its
// ObserveRequest is the HTTP layer's observer.
type Metrics struct {
	tenantLabels bool

	claims         *prometheus.CounterVec
	claimLatency   *prometheus.HistogramVec
	fenceRefusals  *prometheus.CounterVec
	leasesLost     *prometheus.CounterVec
	takeBacks      *prometheus.CounterVec
	groupSize      prometheus.Histogram
	groupReruns    prometheus.Counter
	writeLatency   prometheus.Histogram
	connsOpened    prometheus.Counter
	live           *liveCollector
	readErrors     prometheus.Counter
	collectorsList []prometheus.Collector
}

var (
	_ runs.Observer  = (*Metrics)(nil)
	_ sqldb.Observer = (*Metrics)(nil)
)

// fenceCodes are the refusals of the fence (DESIGN.md section 4).
var fenceCodes = map[api.ProblemCode]bool{api.CodeStaleLease: true, api.CodeLeaseExpired: true, api.CodeAttemptEnded: true}

// New builds the families over the overview reader; register them with Collectors.
func New(store *overview.Store, o Options) *Metrics {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Metrics{tenantLabels: o.TenantLabels}
	tl := func(labels ...string) []string {
		if o.TenantLabels {
			return append(labels, "tenant")
		}
		return labels
	}
	m.claims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_claims_total",
		Help: "Claim transactions by outcome (leased, empty, budget_hold, refused: the claim asked for something the tenant does not have, error: the service failed); a long poll that looks again counts each look.",
	}, tl("outcome"))
	m.claimLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ledger_claim_duration_seconds",
		Help:    "Duration of one claim transaction (without a long poll's waiting), by outcome.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"outcome"})
	m.fenceRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_fence_refusals_total",
		Help: "Holder writes the fence refused, by problem code (stale_lease, lease_expired, attempt_ended).",
	}, tl("code"))
	m.leasesLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_leases_lost_total",
		Help: "Leases that expired and that the reaper took back (the attempt ends lost).",
	}, tl())
	m.takeBacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_reaper_takebacks_total",
		Help: "Reaper take-backs of expired leases by result: taken_back, lost_race (a renewal or another replica won), failed (retried next pass).",
	}, []string{"result"})
	m.groupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ledger_sqlite_group_commit_size",
		Help:    "Write transactions committed together by one SQLite commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	m.groupReruns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ledger_sqlite_group_reruns_total",
		Help: "SQLite commit groups run a second time, each write in its own savepoint, because one write failed after changing rows.",
	})
	m.writeLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ledger_db_write_duration_seconds",
		Help:    "Duration of a write transaction as its caller sees it (retries and the SQLite group's commit included).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.connsOpened = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ledger_db_connections_opened_total",
		Help: "Connections SQL Server's pool opened after start (each a login and a session init); a steady rise means connections are being thrown away.",
	})
	m.readErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ledger_metrics_read_errors_total",
		Help: "Scrapes whose read of the live counts from the database failed (the gauges are then absent).",
	})
	m.live = &liveCollector{store: store, ttl: o.CacheTTL, tenantLabels: o.TenantLabels, log: o.Logger, errors: m.readErrors}
	m.live.describe(tl)
	for _, r := range []string{"taken_back", "lost_race", "failed"} {
		m.takeBacks.WithLabelValues(r)
	}
	if !o.TenantLabels {
		// Without tenants every series is known now: export zeros from the start, so a
		// rate() over a fresh replica has a beginning.
		for _, out := range []runs.ClaimOutcome{runs.ClaimLeased, runs.ClaimEmpty, runs.ClaimBudgetHold, runs.ClaimCostHold, runs.ClaimRefused, runs.ClaimError} {
			m.claims.WithLabelValues(string(out))
		}
		for c := range fenceCodes {
			m.fenceRefusals.WithLabelValues(string(c))
		}
		m.leasesLost.WithLabelValues()
	}
	m.collectorsList = []prometheus.Collector{m.claims, m.claimLatency, m.fenceRefusals, m.leasesLost, m.takeBacks,
		m.groupSize, m.groupReruns, m.writeLatency, m.connsOpened, m.readErrors, m.live}
	return m
}

// Collectors returns every family, to register.
func (m *Metrics) Collectors() []prometheus.Collector { return m.collectorsList }

func (m *Metrics) labels(tenantID string, values ...string) []string {
	if m.tenantLabels {
		return append(values, tenantID)
	}
	return values
}

// Claimed counts one claim transaction.
func (m *Metrics) Claimed(tenantID string, outcome runs.ClaimOutcome, took time.Duration) {
	m.claims.WithLabelValues(m.labels(tenantID, string(outcome))...).Inc()
	m.claimLatency.WithLabelValues(string(outcome)).Observe(took.Seconds())
}

// TakeBack counts one reaper take-back.
func (m *Metrics) TakeBack(tenantID string, took bool, err error) {
	switch {
	case err != nil:
		m.takeBacks.WithLabelValues("failed").Inc()
	case took:
		m.takeBacks.WithLabelValues("taken_back").Inc()
		m.leasesLost.WithLabelValues(m.labels(tenantID)...).Inc()
	default:
		m.takeBacks.WithLabelValues("lost_race").Inc()
	}
}

// WriteDone records a write transaction's latency.
func (m *Metrics) WriteDone(d time.Duration) { m.writeLatency.Observe(d.Seconds()) }

// GroupCommitted records the size of a SQLite commit group.
func (m *Metrics) GroupCommitted(size int) { m.groupSize.Observe(float64(size)) }

// GroupRerun counts a SQLite commit group run a second time in savepoints.
func (m *Metrics) GroupRerun() { m.groupReruns.Inc() }

// ConnectionOpened counts a connection SQL Server's pool opened.
func (m *Metrics) ConnectionOpened() { m.connsOpened.Inc() }

// ObserveRequest counts the fence's refusals from the problem codes the HTTP layer answered.
func (m *Metrics) ObserveRequest(r web.Request) {
	if fenceCodes[r.Code] {
		m.fenceRefusals.WithLabelValues(m.labels(r.TenantID, string(r.Code))...).Inc()
	}
}

// liveCollector reads the live counts from the database when scraped, at most once per ttl.
type liveCollector struct {
	store        *overview.Store
	ttl          time.Duration
	tenantLabels bool
	log          *slog.Logger
	errors       prometheus.Counter

	runs, age, pending *prometheus.Desc

	mu     sync.Mutex // held across the read: concurrent scrapes share one
	read   time.Time
	cached []prometheus.Metric
}

func (l *liveCollector) describe(tl func(...string) []string) {
	l.runs = prometheus.NewDesc("ledger_runs", "Live runs by state (queued, leased, waiting: parked on a decision or a child) and band. Ended runs are history: see the run listing.", tl("state", "band"), nil)
	l.age = prometheus.NewDesc("ledger_oldest_due_queued_run_age_seconds", "How long the oldest due queued run has waited past its due time (claim lag; 0 when none is due).", tl(), nil)
	l.pending = prometheus.NewDesc("ledger_decisions_pending", "Decisions waiting for an answer.", tl(), nil)
}

// Describe implements prometheus.Collector.
func (l *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.runs
	ch <- l.age
	ch <- l.pending
}

// Collect implements prometheus.Collector.
func (l *liveCollector) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cached == nil || time.Since(l.read) >= l.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		all, err := l.store.AllTenants(ctx)
		cancel()
		if err != nil {
			l.errors.Inc()
			l.log.Warn("metrics: reading the live counts failed", "err", err)
			// Serve nothing rather than stale numbers that look current; try again next scrape.
			l.cached, l.read = nil, time.Time{}
			return
		}
		l.cached, l.read = l.build(all), time.Now()
	}
	for _, m := range l.cached {
		ch <- m
	}
}

func (l *liveCollector) build(all overview.All) []prometheus.Metric {
	var out []prometheus.Metric
	emit := func(c overview.Counts, tenant ...string) {
		for band := 0; band < 3; band++ {
			name := overview.BandName(band)
			out = append(out,
				prometheus.MustNewConstMetric(l.runs, prometheus.GaugeValue, float64(c.Queued[band]), append([]string{"queued", name}, tenant...)...),
				prometheus.MustNewConstMetric(l.runs, prometheus.GaugeValue, float64(c.Leased[band]), append([]string{"leased", name}, tenant...)...),
				prometheus.MustNewConstMetric(l.runs, prometheus.GaugeValue, float64(c.Waiting[band]), append([]string{"waiting", name}, tenant...)...))
		}
		out = append(out,
			prometheus.MustNewConstMetric(l.age, prometheus.GaugeValue, c.ClaimLag(all.At).Seconds(), tenant...),
			prometheus.MustNewConstMetric(l.pending, prometheus.GaugeValue, float64(c.PendingDecisions), tenant...))
	}
	if l.tenantLabels {
		ids := make([]string, 0, len(all.Tenants))
		for id := range all.Tenants {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			emit(*all.Tenants[id], id)
		}
		return out
	}
	var sum overview.Counts
	for _, c := range all.Tenants {
		sum.Add(*c)
	}
	emit(sum)
	return out
}
