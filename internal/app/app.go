// Package app wires the service's parts into one HTTP handler and its background work. The
// binary and the end-to-end tests build the service the same way through it.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/console"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/locks"
	"github.com/ledger-dev/ledger/internal/metrics"
	"github.com/ledger-dev/ledger/internal/operations"
	"github.com/ledger-dev/ledger/internal/overview"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/retention"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/schedules"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/traces"
	"github.com/ledger-dev/ledger/internal/web"
	"github.com/ledger-dev/ledger/internal/web/openapi"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

// Version is the service version reported in the OpenAPI document.
const Version = "0.1.0"

// Config is what the service needs beyond its database.
type Config struct {
	MaxBody int64
	Logger  *slog.Logger
	Runs    runs.Config
	// PurgeInterval is how often retention runs on this replica (0: retention.DefaultInterval;
	// negative: never).
	PurgeInterval time.Duration
	// Limits is what one tenant, one client address, and all tenants together may take of
	// the replica (zero fields: no limit).
	Limits admission.Limits
	// KeyCacheTTL is how long a key read from the database is trusted (0: not cached; use
	// tenancy.DefaultKeyCacheTTL for the default).
	KeyCacheTTL time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the client address.
	TrustedProxies []*net.IPNet
	// Conns caps the connections the server holds open, in total and per client address.
	Conns web.ConnLimits
	// MetricsTenantLabels adds a tenant label to the per-tenant metric families.
	MetricsTenantLabels bool
	// MetricsCacheTTL is how long one database read serves scrapes (0: the default).
	MetricsCacheTTL time.Duration
	// ConsoleSecureCookies is console.SecureAuto (default), SecureAlways or SecureNever.
	ConsoleSecureCookies string
	// MaxPendingDecisions caps one attempt's pending decisions (0: decisions.DefaultMaxPending).
	MaxPendingDecisions int
	// ScheduleInterval is how often this replica's scheduler fires due schedules (0:
	// schedules.DefaultInterval; negative: never, for tests that drive Scheduler.Tick).
	ScheduleInterval time.Duration
	// Webhooks says which endpoint URLs are allowed and where payloads link to.
	Webhooks webhooks.Config
	// WebhookDispatch tunes this replica's webhook dispatcher (zero: defaults).
	WebhookDispatch webhooks.DispatcherConfig
	// Operations tunes this replica's runner of bulk operations (zero: defaults).
	Operations operations.RunnerConfig
	// OTLP, when its Endpoint is set, exports the history as OpenTelemetry traces.
	OTLP OTLPConfig
}

// OTLPConfig says where the traces go: an OTLP/HTTP (protobuf) endpoint URL, such as
// https://collector:4318/v1/traces, and the headers each export sends (authentication).
type OTLPConfig struct {
	Endpoint string
	Headers  map[string]string
}

// App is the assembled service.
type App struct {
	Server *web.Server
	DB     *sqldb.DB
	Keys   *tenancy.Store
	Runs   *runs.Service
	// Scheduler fires the tenants' schedules (Background runs it on this replica).
	Scheduler *schedules.Scheduler
	// Webhooks is the webhook store and Dispatcher this replica's sender.
	Webhooks   *webhooks.Store
	Dispatcher *webhooks.Dispatcher
	// Operations works through bulk operations (Background runs it on this replica).
	Operations *operations.Runner
	log        *slog.Logger
	purge      time.Duration
	schedule   time.Duration
	// projectors maintain the projections of the change feed (DESIGN.md 5b): the insights
	// roll-ups. Every replica runs them; each step's lease lets one replica at a time apply.
	projectors []*feed.Runner
	// exporters send projections outside the database (the OTLP traces), off the write path.
	exporters []*feed.ExportRunner
}

// New assembles the service over an open, migrated database.
func New(db *sqldb.DB, cfg Config) *App {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	keys := tenancy.NewStore(db)
	ov := overview.NewStore(db)
	m := metrics.New(ov, metrics.Options{TenantLabels: cfg.MetricsTenantLabels, CacheTTL: cfg.MetricsCacheTTL, Logger: log})
	db.SetObserver(m)
	s := web.New(web.Config{
		MaxBody: cfg.MaxBody,
		Logger:  log,
		Version: Version,
		Ready:   func(ctx context.Context) error { return Ready(ctx, db) },

		TrustedProxies: cfg.TrustedProxies,
		Conns:          cfg.Conns,
		Identify:       identify,
		Observe:        m.ObserveRequest,
	})
	openapi.Route(s)
	s.Registry.MustRegister(m.Collectors()...)
	auth := tenancy.NewAuthenticator(keys)
	auth.SetKeyCacheTTL(cfg.KeyCacheTTL)
	auth.SetLimits(cfg.Limits)
	s.SetAuth(auth.Require)
	proj := projects.NewStore(db)
	projects.Routes(s, proj)
	rs := runs.NewService(db, cfg.Runs, log)
	rs.SetObserver(m)
	wh := webhooks.NewStore(db, cfg.Webhooks)
	whCfg := cfg.WebhookDispatch
	if whCfg.Logger == nil {
		whCfg.Logger = log
	}
	disp := webhooks.NewDispatcher(wh, whCfg)
	s.Registry.MustRegister(disp.Collectors()...)
	rs.AddHooks(decisions.NotifyingHooks(wh)) // an ending attempt closes its pending decisions
	rs.AddHooks(calls.Hooks())                // and abandons its open calls
	rs.AddHooks(delegations.Hooks())          // a delegation's status follows its child run
	rel := releases.NewStore(db)
	rs.AddHooks(rel.Hooks())   // a claim needs an active release of the caller's tenant
	rs.AddHooks(wh.RunHooks()) // run.ended and attempt.lost join the outbox in the same transaction
	runs.Routes(s, rs)
	s.OnShutdown(rs.StopWaits) // a read waiting for a change, and a claim waiting for work, answer at once
	locks.Routes(s, locks.NewStore(db))
	checkpoints.Routes(s, checkpoints.NewStore(db, rs))
	cs := calls.NewStore(db, rs)
	cs.OnBudgetHeld(wh.BudgetHeld) // budget.held joins the outbox with the cost that reached the budget
	calls.Routes(s, cs)
	dec, del, hist := decisions.NewStore(db, rs).WithMaxPending(cfg.MaxPendingDecisions).WithNotifier(wh), delegations.NewStore(db, rs), history.NewStore(db)
	decisions.Routes(s, dec)
	delegations.Routes(s, del)
	releases.Routes(s, rel, rs)
	history.Routes(s, hist)
	webhooks.Routes(s, wh)
	ins := insights.NewStore(db)
	insights.Routes(s, ins)
	sched := schedules.NewStore(db, rs)
	schedules.Routes(s, sched)
	ops := operations.NewStore(db, rs)
	operations.Routes(s, ops)
	opCfg := cfg.Operations
	if opCfg.Logger == nil {
		opCfg.Logger = log
	}
	opRunner := operations.NewRunner(db, rs, opCfg)
	scheduler := schedules.NewScheduler(db, rs, cfg.ScheduleInterval, log)
	s.Registry.MustRegister(scheduler.Collectors()...)
	holder := ids.New().String()
	projectors := []*feed.Runner{
		feed.NewRunner(db, insights.NewProjector(db, 0), feed.Options{Holder: holder, Log: log}),
	}
	var exporters []*feed.ExportRunner
	if cfg.OTLP.Endpoint != "" {
		exporters = append(exporters, feed.NewExportRunner(db, traces.New(otlpExporter(cfg.OTLP), 0, Version),
			feed.Options{Holder: holder, Log: log}))
	}
	s.Registry.MustRegister(feed.NewCollector(db, log))
	// The admin console calls the same stores with the signed-in key's tenant.
	console.Routes(s.Echo, console.Deps{DB: db, Auth: auth, Runs: rs, History: hist, Decisions: dec, Delegations: del,
		Releases: rel, Projects: proj, Overview: ov, Insights: ins, Calls: cs, Schedules: sched, Operations: ops, Webhooks: wh,
		Secure: cfg.ConsoleSecureCookies, Logger: log})
	return &App{Server: s, DB: db, Keys: keys, Runs: rs, Scheduler: scheduler, Webhooks: wh, Dispatcher: disp, Operations: opRunner,
		log: log, purge: cfg.PurgeInterval, schedule: cfg.ScheduleInterval, projectors: projectors, exporters: exporters}
}

// identify names the tenant and key of a request the authenticator admitted.
func identify(ctx context.Context) (string, string, bool) {
	p, ok := tenancy.From(ctx)
	return p.TenantID, p.KeyID, ok
}

// Background runs the replica's background work until ctx ends: the reaper, the expiry of
// pending decisions on the reaper's interval, the scheduler, the webhook dispatcher, the
// bulk operations' runner, retention and the change feed's projectors. Every replica runs
// them all; they need no leader (a projector's lease picks one replica per step).
func (a *App) Background(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range a.projectors {
		wg.Add(1)
		go func() { defer wg.Done(); p.Run(ctx) }()
	}
	for _, e := range a.exporters {
		wg.Add(1)
		go func() { defer wg.Done(); e.Run(ctx) }()
	}
	if a.purge >= 0 {
		wg.Add(1)
		go func() { defer wg.Done(); retention.RunJob(ctx, a.DB, a.purge, a.log) }()
	}
	if a.schedule >= 0 {
		wg.Add(1)
		go func() { defer wg.Done(); a.Scheduler.Run(ctx) }()
	}
	wg.Add(4)
	go func() { defer wg.Done(); a.Runs.RunReaper(ctx) }()
	go func() { defer wg.Done(); a.Operations.Run(ctx) }()
	go func() { defer wg.Done(); a.Dispatcher.Run(ctx) }()
	go func() {
		defer wg.Done()
		every(ctx, a.Runs.Config().ReaperInterval, func() {
			if n, err := decisions.ExpirePendingNotify(ctx, a.DB, a.Webhooks); err != nil && ctx.Err() == nil {
				a.log.WarnContext(ctx, "expiring decisions failed", "err", err)
			} else if n > 0 {
				a.log.InfoContext(ctx, "expired pending decisions", "count", n)
			}
		})
	}()
	wg.Wait()
}

// CatchUpFeed brings every projection of the change feed up to what has committed (tests
// and tools; the service's projectors run in Background).
func (a *App) CatchUpFeed(ctx context.Context) error {
	for _, p := range a.projectors {
		if err := p.CatchUp(ctx); err != nil {
			return err
		}
	}
	for _, e := range a.exporters {
		if err := e.CatchUp(ctx); err != nil {
			return err
		}
	}
	return nil
}

// otlpExporter is the OpenTelemetry SDK's OTLP/HTTP span exporter. Its own retries are off:
// a failed send leaves the feed's position where it was, and the export runner backs off
// and sends the same spans again (the database is the backlog, bounded by nothing a
// request waits on).
func otlpExporter(c OTLPConfig) sdktrace.SpanExporter {
	e, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.Endpoint),
		otlptracehttp.WithHeaders(c.Headers), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		otlptracehttp.WithTimeout(10*time.Second))
	if err != nil {
		// New fails only on options it cannot apply; serve checked the URL before.
		panic(fmt.Sprintf("app: OTLP exporter: %v", err))
	}
	return e
}

// every calls f each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Ready reports whether db answers and this binary can serve its schema: the one it
// embeds, or a newer one whose newer migrations are all additive (a rolling deploy).
func Ready(ctx context.Context, db *sqldb.DB) error {
	if err := db.Probe(ctx); err != nil {
		return err
	}
	_, _, err := migrate.Servable(ctx, db)
	return err
}
