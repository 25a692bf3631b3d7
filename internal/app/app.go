// Package app wires the service's parts into one HTTP handler and its background work. The
// binary and the end-to-end tests build the service the same way through it.
package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Version is the service version reported in the OpenAPI document.
const Version = "0.1.0"

// Config is what the service needs beyond its database.
type Config struct {
	MaxBody int64
	Logger  *slog.Logger
	Runs    runs.Config
	// MaxInFlight caps API requests served at once; RateLimit and RateBurst bound each
	// tenant's requests per second (0: off).
	MaxInFlight int
	RateLimit   float64
	RateBurst   int
}

// App is the assembled service.
type App struct {
	Server *web.Server
	DB     *sqldb.DB
	Keys   *tenancy.Store
	Runs   *runs.Service
}

// New assembles the service over an open, migrated database.
func New(db *sqldb.DB, cfg Config) *App {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	keys := tenancy.NewStore(db)
	s := web.New(web.Config{
		MaxBody: cfg.MaxBody,
		Logger:  log,
		Version: Version,
		Ready:   func(ctx context.Context) error { return Ready(ctx, db) },

		MaxInFlight: cfg.MaxInFlight,
	})
	auth := tenancy.NewAuthenticator(keys)
	auth.SetRateLimit(cfg.RateLimit, cfg.RateBurst)
	s.SetAuth(auth.Require)
	projects.Routes(s, projects.NewStore(db))
	rs := runs.NewService(db, cfg.Runs, log)
	runs.Routes(s, rs)
	return &App{Server: s, DB: db, Keys: keys, Runs: rs}
}

// Background runs the replica's background work (the reaper) until ctx ends.
func (a *App) Background(ctx context.Context) {
	a.Runs.RunReaper(ctx)
}

// Ready reports whether db answers and its schema is the one this binary embeds.
func Ready(ctx context.Context, db *sqldb.DB) error {
	if err := db.Probe(ctx); err != nil {
		return err
	}
	st, err := db.SchemaState(ctx)
	if err != nil {
		return err
	}
	if !st.Current() {
		return fmt.Errorf("schema is at version %d (dirty %v), this binary needs %d", st.Version, st.Dirty, st.Latest)
	}
	return nil
}
