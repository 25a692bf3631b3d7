package feed

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Collector exports every projector's lag at scrape time (DESIGN.md 5b: "its lag shown in
// /metrics"), read from the database so every replica shows the same figures whichever
// holds the lease.
type Collector struct {
	db      *sqldb.DB
	log     *slog.Logger
	timeout time.Duration
	behind  *prometheus.Desc
	lag     *prometheus.Desc
}

// NewCollector returns the lag collector of db's projectors.
func NewCollector(db *sqldb.DB, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.Default()
	}
	return &Collector{db: db, log: log, timeout: 2 * time.Second,
		behind: prometheus.NewDesc("ledger_feed_lag_versions",
			"Row versions committed that the projector has not applied yet.", []string{"projector"}, nil),
		lag: prometheus.NewDesc("ledger_feed_lag_seconds",
			"Seconds since the projector last applied every committed change (0 when nothing waits).", []string{"projector"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.behind; ch <- c.lag }

// Collect implements prometheus.Collector; a failed read exports nothing and is logged.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	all, err := Statuses(ctx, c.db)
	if err != nil {
		c.log.Warn("reading the feed projectors' lag failed", "err", err)
		return
	}
	for _, s := range all {
		ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, float64(s.Behind()), s.Name)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.Lag().Seconds(), s.Name)
	}
}
