package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/logbuf"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/check"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/web"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

type serveFlags struct {
	db      dbFlags
	addr    string
	migrate bool
	// createDir lets serve create the directories of a --db path that do not exist.
	createDir bool
	maxBody   int64
	grace     time.Duration
	logLevel  string
	// logFlush batches log lines into one write per interval (0: a write per line).
	logFlush  time.Duration
	leaseTTL  time.Duration
	reaper    time.Duration
	aging     time.Duration
	maxDepth  int
	fairness  int
	bootstrap string
	inflight  int
	rateLimit float64
	rateBurst int
	purge     time.Duration

	active          int
	tenantInflight  int
	tenantLongPolls int
	heavyReads      int
	heavyTimeout    time.Duration
	readTimeout     time.Duration
	authFailures    int
	maxConns        int
	maxConnsPerAddr int
	authWindow      time.Duration
	keyCacheTTL     time.Duration
	trustedProxies  string
	// tenantLabels adds a tenant label to the per-tenant metric families.
	tenantLabels bool
	// secureCookies is the console's Secure-cookie mode (--console-secure-cookies).
	secureCookies string
	// pprofAddr is where net/http/pprof listens ("": nowhere).
	pprofAddr string
	// gcPercent is the garbage collector's GOGC when the GOGC variable does not set it (0:
	// Go's default).
	gcPercent int
	// otlpEndpoint and otlpHeaders say where the history goes as OpenTelemetry traces.
	otlpEndpoint string
	otlpHeaders  string
	// maxPending caps one attempt's pending decisions.
	maxPending int
	// webhookAllowHTTP and webhookAllowPrivate relax the webhook URL rules; publicURL is the
	// console's base URL for payload links.
	webhookAllowHTTP, webhookAllowPrivate bool
	publicURL                             string
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stdout)
	var f serveFlags
	f.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q (see ledger serve --help)", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return err
	}
	return serve(ctx, f, stdout, stderr)
}

// register defines serve's flags: the service's settings, the only flags that read LEDGER_*
// variables (sharedSettings).
func (f *serveFlags) register(fs *flag.FlagSet) {
	f.db.register(fs)
	fs.StringVar(&f.addr, "addr", ":8080", "address to listen on")
	fs.BoolVar(&f.migrate, "migrate", false, "SQL Server: apply pending migrations at start instead of refusing (SQLite always migrates)")
	fs.BoolVar(&f.createDir, "create-dir", false, "SQLite: create the directories of a --db path that do not exist (the default ./data is always created)")
	fs.Int64Var(&f.maxBody, "max-body", 1<<20, "largest request body in bytes; larger ones get 413")
	fs.DurationVar(&f.grace, "shutdown-grace", 20*time.Second, "how long shutdown waits for in-flight requests")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&f.logFlush, "log-flush", 0, "hold log lines and write them together at most this often (0: each line at once); a kill -9 or crash loses the lines held, at most this long's or 64 KiB; a shutdown loses none")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "lease length when a claim names none")
	fs.DurationVar(&f.reaper, "reaper-interval", 5*time.Second, "how often each replica's reaper takes back expired leases")
	fs.DurationVar(&f.aging, "band-aging", 10*time.Minute, "how long a BACKGROUND run waits past its due time before it competes with BATCH")
	fs.IntVar(&f.maxDepth, "max-depth", 8, "deepest chain of parent runs an enqueue may make (loop_depth past it)")
	fs.IntVar(&f.maxPending, "max-pending-decisions", decisions.DefaultMaxPending, "pending decisions one attempt may have at once; past it a request gets 409 decision_limit")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "OTLP/HTTP (protobuf) URL the history is exported to as OpenTelemetry traces, e.g. http://collector:4318/v1/traces (empty: no export)")
	fs.StringVar(&f.otlpHeaders, "otlp-headers", "", "headers each OTLP export sends, as name=value pairs separated by commas (e.g. authorization=Bearer%20T; values may be percent-encoded)")
	fs.IntVar(&f.fairness, "claim-fairness-window", 64, "how many of the oldest due runs a claim weighs for project fairness")
	fs.StringVar(&f.bootstrap, "bootstrap-tenant", "default", "tenant created, with one admin and one runtime key printed once, on an embedded database that has no tenant yet")
	fs.IntVar(&f.inflight, "max-inflight", 1024, "API requests this replica serves at once, all tenants together; more get 429 rate_limited (0: no cap)")
	fs.IntVar(&f.active, "max-active", 8, "API requests this replica works on at once; the others wait, the tenants with requests waiting served in turn (0: no limit; raise it on SQL Server)")
	fs.IntVar(&f.tenantInflight, "tenant-max-inflight", 256, "API requests one tenant may have served at once, below --max-inflight; more get 429 rate_limited (0: no cap)")
	fs.IntVar(&f.tenantLongPolls, "tenant-max-long-polls", 64, "claims of one tenant that may wait for work at once; past it a claim answers 204 with Retry-After at once (0: no cap). Reads with waitSeconds (decisions, runs) have as many slots of their own; past them they answer at once")
	fs.IntVar(&f.heavyReads, "tenant-max-heavy-reads", 2, "heavy reads (insights, the console's insights page) one tenant may have served at once; more get 429 rate_limited with Retry-After (0: no cap)")
	fs.DurationVar(&f.heavyTimeout, "heavy-read-timeout", 15*time.Second, "deadline of one heavy read: past it its statements are cancelled and it answers 503 database_unavailable (0: --read-timeout's)")
	fs.DurationVar(&f.readTimeout, "read-timeout", 45*time.Second, "deadline of every GET, above the longest wait a read may ask for (30 s): past it the read's statement is cancelled and it answers 503 database_unavailable (0: none; a client going away cancels it too)")
	fs.Float64Var(&f.rateLimit, "rate-limit", 10000, "requests per second each tenant may make; more get 429 rate_limited (0: no limit)")
	fs.IntVar(&f.rateBurst, "rate-burst", 20000, "requests a tenant may make at once above its rate")
	fs.IntVar(&f.authFailures, "auth-failure-limit", 20, "failed authentications a client address may make per --auth-failure-window; past it, anything but a key whose id exists gets 429 rate_limited (0: no limit)")
	fs.IntVar(&f.maxConns, "max-conns", 10000, "connections this replica holds open at once, all clients together; one past it is closed at once (0: no cap; keep it under the open-file limit)")
	fs.IntVar(&f.maxConnsPerAddr, "max-conns-per-addr", 1000, "connections one client address (IPv6: its /64) may hold open at once; trusted proxies are exempt (0: no cap)")
	fs.DurationVar(&f.authWindow, "auth-failure-window", time.Minute, "the window over which --auth-failure-limit refills")
	fs.DurationVar(&f.keyCacheTTL, "key-cache-ttl", tenancy.DefaultKeyCacheTTL, "how long a replica trusts an API key it has read; a revoked key may work that long on a replica that used it (0: read the key on every request)")
	fs.StringVar(&f.trustedProxies, "trusted-proxies", "", "comma-separated addresses or CIDR ranges of proxies whose X-Forwarded-For names the client address (empty: the TCP peer is the client)")
	fs.BoolVar(&f.tenantLabels, "metrics-tenant-labels", false, "add a tenant label to the per-tenant metrics (one series per tenant: mind the cardinality)")
	fs.BoolVar(&f.webhookAllowHTTP, "webhook-allow-http", false, "accept http:// webhook URLs (https:// only otherwise)")
	fs.BoolVar(&f.webhookAllowPrivate, "webhook-allow-private", false, "let webhooks reach private, loopback, link-local and unique-local addresses")
	fs.StringVar(&f.publicURL, "public-url", "", "the service's external base URL (https://ledger.example.com), for the console links in webhook payloads")
	fs.StringVar(&f.secureCookies, "console-secure-cookies", "auto", "console cookies carry Secure: auto (when the request is https, or X-Forwarded-Proto says https), always, or never")
	fs.DurationVar(&f.purge, "purge-interval", time.Hour, "how often this replica deletes ended run chains past their project's retention (negative: never)")
	fs.IntVar(&f.gcPercent, "gc-percent", defaultGCPercent, "the Go garbage collector's GOGC, unless the GOGC variable is set: how far, in percent, the heap grows past what the last collection kept before the next collection (0: Go's default, 100)")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "address of a separate listener serving Go's net/http/pprof profiles, unauthenticated: bind it to loopback (empty: off)")
}

// defaultGCPercent is --gc-percent's default. The service keeps few MiB of live heap (the
// SQLite page cache is not Go's), so Go's 100 collected it about 18 times a second under
// the HTTP cycle, 5 to 7 % of the server's CPU; at 400 the collector's share is under 1 %
// for a few MiB more heap (docs/perf/issue-35.md).
const defaultGCPercent = 400

// gcPercent is the GOGC serve sets (ok false: none, Go's own stands): flag's, unless it is 0
// or the GOGC variable is set, which Go has read already and an operator meant.
func gcPercent(flag int, lookupEnv func(string) (string, bool)) (pct int, ok bool) {
	if _, set := lookupEnv("GOGC"); set || flag <= 0 {
		return 0, false
	}
	return flag, true
}

func serve(ctx context.Context, f serveFlags, stdout, stderr io.Writer) error {
	if pct, ok := gcPercent(f.gcPercent, os.LookupEnv); ok {
		debug.SetGCPercent(pct)
	}
	proxies, err := web.ParseCIDRs(f.trustedProxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	if f.logFlush > 0 {
		// Deferred first, so it runs last: the lines of the shutdown are written too.
		lw := logbuf.New(stderr, f.logFlush)
		defer lw.Close()
		stderr = lw
	}
	log, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return err
	}
	if err := refuseMissingDir(f.db.dsn, f.createDir); err != nil {
		return err
	}
	db, err := openDB(ctx, f.db, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if f.migrate {
		if err := checkAtStart(ctx, db, check.ForMigrate, log); err != nil {
			return err
		}
	}
	if err := prepareSchema(ctx, db, f.migrate, f.bootstrap, stdout); err != nil {
		return err
	}
	if err := checkAtStart(ctx, db, check.ForServe, log); err != nil {
		return err
	}
	otlp, err := f.otlp()
	if err != nil {
		return err
	}
	// A restored backup would otherwise hand out again the row versions (ETags, changedSince
	// positions) handed out after it was taken.
	if from, to, err := db.RaiseVersionFloor(ctx); err != nil {
		return err
	} else if to > from {
		log.Info("row versions continue from the clock's floor", "from", uint64(from), "to", uint64(to))
	}
	rcfg := runs.DefaultConfig()
	rcfg.LeaseTTL, rcfg.ReaperInterval, rcfg.BandAging = f.leaseTTL, f.reaper, f.aging
	rcfg.MaxDepth, rcfg.FairnessWindow = f.maxDepth, f.fairness
	a := app.New(db, app.Config{MaxBody: f.maxBody, Logger: log, Runs: rcfg, PurgeInterval: f.purge,
		KeyCacheTTL: f.keyCacheTTL, TrustedProxies: proxies,
		Conns: web.ConnLimits{Total: f.maxConns, PerAddr: f.maxConnsPerAddr},
		Limits: admission.Limits{Rate: f.rateLimit, Burst: f.rateBurst, InFlight: f.tenantInflight, LongPolls: f.tenantLongPolls,
			AuthFailures: f.authFailures, AuthFailureWindow: f.authWindow, ReplicaInFlight: f.inflight, ReplicaActive: f.active,
			HeavyReads: f.heavyReads, HeavyReadTimeout: f.heavyTimeout, ReadTimeout: f.readTimeout},
		MetricsTenantLabels: f.tenantLabels, ConsoleSecureCookies: f.secureCookies, MaxPendingDecisions: f.maxPending,
		Webhooks: webhooks.Config{AllowHTTP: f.webhookAllowHTTP, AllowPrivate: f.webhookAllowPrivate, ConsoleURL: strings.TrimSuffix(f.publicURL, "/")},
		OTLP:     otlp})
	log.Info("starting", "addr", f.addr, "dialect", db.Dialect.Name(), "version", app.Version)
	if f.pprofAddr != "" {
		_, stopPprof, err := servePprof(f.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	bg, stopBackground := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Background(bg) }()
	// A database this process can no longer use (the embedded writer gave up) stops the
	// server as a signal would, and the exit is non-zero.
	ctx, stopServing := context.WithCancelCause(ctx)
	defer stopServing(nil)
	go func() {
		select {
		case <-db.Fatal():
			stopServing(sqldb.ErrWriterBroken)
		case <-ctx.Done():
		}
	}()
	err = a.Server.Start(ctx, f.addr, f.grace, func(addr string) { log.Info("listening", "addr", addr) })
	// Requests have drained: stop the reaper and wait for its pass to finish.
	stopBackground()
	<-done
	log.Info("stopped")
	if cause := context.Cause(ctx); errors.Is(cause, sqldb.ErrWriterBroken) {
		return cause
	}
	return err
}

// check refuses limits that would let one tenant shut the others out: a tenant's share of
// requests in flight must leave room for another tenant's.
func (f serveFlags) check() error {
	switch {
	case f.inflight < 0 || f.active < 0 || f.tenantInflight < 0 || f.tenantLongPolls < 0 || f.authFailures < 0 ||
		f.maxConns < 0 || f.maxConnsPerAddr < 0:
		return fmt.Errorf("the in-flight, active, long-poll, failed-authentication and connection limits must not be negative")
	case f.inflight > 0 && (f.tenantInflight == 0 || f.tenantInflight >= f.inflight):
		return fmt.Errorf("--tenant-max-inflight (%d) must be between 1 and --max-inflight (%d) less one, or one tenant could fill the replica",
			f.tenantInflight, f.inflight)
	case f.heavyReads < 0 || f.heavyTimeout < 0 || f.readTimeout < 0:
		return fmt.Errorf("--tenant-max-heavy-reads, --heavy-read-timeout and --read-timeout must not be negative")
	case f.readTimeout > 0 && f.readTimeout <= 30*time.Second:
		return fmt.Errorf("--read-timeout (%s) must be longer than the longest wait a read may ask for (30s)", f.readTimeout)
	case f.authFailures > 0 && f.authWindow <= 0:
		return fmt.Errorf("--auth-failure-window must be positive")
	case f.keyCacheTTL < 0:
		return fmt.Errorf("--key-cache-ttl must not be negative")
	case f.logFlush < 0:
		return fmt.Errorf("--log-flush must not be negative")
	case f.gcPercent < 0:
		return fmt.Errorf("--gc-percent must not be negative")
	case f.maxPending < 1:
		return fmt.Errorf("--max-pending-decisions must be at least 1")
	}
	return nil
}

// otlp parses --otlp-endpoint and --otlp-headers (the OpenTelemetry exporters' own form of
// OTEL_EXPORTER_OTLP_HEADERS: name=value pairs, comma-separated, values percent-decoded).
func (f serveFlags) otlp() (app.OTLPConfig, error) {
	if f.otlpEndpoint == "" {
		if f.otlpHeaders != "" {
			return app.OTLPConfig{}, fmt.Errorf("--otlp-headers needs --otlp-endpoint")
		}
		return app.OTLPConfig{}, nil
	}
	u, err := url.Parse(f.otlpEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return app.OTLPConfig{}, fmt.Errorf("--otlp-endpoint must be an http:// or https:// URL, such as http://collector:4318/v1/traces")
	}
	c := app.OTLPConfig{Endpoint: f.otlpEndpoint, Headers: map[string]string{}}
	for _, pair := range strings.Split(f.otlpHeaders, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		v, err := url.PathUnescape(strings.TrimSpace(value))
		if !ok || strings.TrimSpace(name) == "" || err != nil {
			// The pair may hold a secret: name only its position.
			return app.OTLPConfig{}, fmt.Errorf("--otlp-headers: each header is name=value (percent-encoded), separated by commas")
		}
		c.Headers[strings.TrimSpace(name)] = v
	}
	return c, nil
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("bad --log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// prepareSchema brings the schema to this binary's version. SQLite migrates under the file
// lock, and a database that had no schema gets the bootstrap tenant and keys inside the same
// lock, so two processes starting together bootstrap once. SQL Server migrates only when
// asked (migrations are a deploy step) and otherwise refuses a schema that is behind or dirty.
// A schema newer than this binary's is served when every newer migration is additive (a
// rolling deploy: the new binary migrated first), with a log line saying so, and refused
// naming the breaking one otherwise.
func prepareSchema(ctx context.Context, db *sqldb.DB, allowMigrate bool, bootstrapTenant string, stdout io.Writer) error {
	if !db.Dialect.Embedded() && !allowMigrate {
		return requireCurrentSchema(ctx, db)
	}
	mg, err := migrate.New(db)
	if err != nil {
		return err
	}
	defer mg.Close()
	before, err := mg.State()
	if err != nil {
		return err
	}
	if before.Dirty {
		return fmt.Errorf("schema version %d is dirty: %s", before.Version, before.DirtyFix())
	}
	if before.Version > before.Latest {
		return requireCurrentSchema(ctx, db)
	}
	if err := mg.Up(); err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	// A database without a tenant bootstraps, not only one this call created: a first serve
	// killed between its migrations and the bootstrap would otherwise leave a database no
	// key opens and nothing to say so.
	if !db.Dialect.Embedded() || bootstrapTenant == "" {
		return nil
	}
	store := tenancy.NewStore(db)
	if has, err := store.HasTenants(ctx); err != nil || has {
		return err
	}
	admin, _, err := store.CreateKey(ctx, bootstrapTenant, tenancy.RoleAdmin)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	runtime, _, err := store.CreateKey(ctx, bootstrapTenant, tenancy.RoleRuntime)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	fmt.Fprintf(stdout, "created tenant %q on a new database; these keys are shown once:\n", bootstrapTenant)
	fmt.Fprintf(stdout, "admin key: %s\nruntime key: %s\n", admin, runtime)
	return nil
}

// requireCurrentSchema refuses a schema this binary cannot serve: behind, dirty, or newer by
// a migration that is not additive (the error says what to run or deploy). It never
// migrates: only `migrate up` and `serve` change the schema. A newer schema whose newer
// migrations are all additive is accepted, and the database's logger says so.
func requireCurrentSchema(ctx context.Context, db *sqldb.DB) error {
	st, newer, err := migrate.Servable(ctx, db)
	var se *migrate.SchemaError
	if errors.As(err, &se) && st.Version < st.Latest && !st.Dirty {
		if db.Dialect.Embedded() {
			return fmt.Errorf("%w (or start `ledger serve`, which migrates the embedded database)", err)
		}
		return fmt.Errorf("%w (or start `ledger serve --migrate`)", err)
	}
	if err != nil {
		return err
	}
	if len(newer) > 0 {
		versions := make([]string, len(newer))
		for i, m := range newer {
			versions[i] = fmt.Sprintf("%d %s", m.Version, m.Title)
		}
		db.Logger().Info("schema is newer than this binary's; every newer migration is additive, so this binary serves it",
			"schema_version", st.Version, "binary_schema_version", st.Latest, "additive", strings.Join(versions, ", "))
	}
	return nil
}

// refuseMissingDir refuses a SQLite --db whose directory does not exist, unless createDir
// or the path is the default (./data/ledger.db, created on a first run): a typo in a path
// would otherwise create directories, a database and keys nobody reads.
func refuseMissingDir(dsn string, createDir bool) error {
	if createDir || dsn == defaultDB || sqldb.IsSQLServer(dsn) {
		return nil
	}
	path, err := sqldb.SQLitePath(dsn)
	if err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--db %s: the directory %s does not exist; create it, or start with --create-dir (LEDGER_CREATE_DIR=true) to have serve create it", path, dir)
	}
	return nil
}
