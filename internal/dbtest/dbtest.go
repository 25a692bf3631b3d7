// Package dbtest is the conformance harness: it runs one set of store cases against every
// dialect. SQLite always runs, on a fresh file per test. SQL Server runs when
// LEDGER_TEST_MSSQL_DSN is set, or when testcontainers-go finds a Docker engine; otherwise
// its run is skipped with one line saying why.
package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// Options adjust the database a case gets.
type Options struct {
	// Clock injects time; nil uses the database clock.
	Clock sqldb.Clock
}

// Target is one dialect the suite runs against.
type Target struct {
	Name string
	// Open returns a migrated database for one test, closed when the test ends.
	Open func(t testing.TB, o Options) *sqldb.DB
}

// Run calls fn once per dialect, as subtests named for the dialect. Without a SQL Server,
// the first "sqlserver" subtest of the test binary is skipped with one line saying why,
// and later calls leave the dialect out instead of skipping every case again.
func Run(t *testing.T, fn func(t *testing.T, tgt Target)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite()) })
	if mssqlMissing.Load() {
		return
	}
	t.Run("sqlserver", func(t *testing.T) {
		// Looked for only here, so `-run X/sqlite` never probes Docker.
		mssqlOnce.Do(func() { mssqlDSN, mssqlWhy = findMSSQL() })
		if mssqlDSN == "" {
			mssqlMissing.Store(true)
			if mssqlReported.CompareAndSwap(false, true) {
				t.Skip("sqlserver: " + mssqlWhy + "; every SQL Server case of this package is skipped")
			}
			t.SkipNow() // a parallel test that got here first already said why
		}
		fn(t, mssqlTarget())
	})
}

// SQLite is the embedded target: a fresh, migrated file in the test's temp dir.
func SQLite() Target {
	return Target{Name: "sqlite", Open: func(t testing.TB, o Options) *sqldb.DB {
		t.Helper()
		path := filepath.Join(t.TempDir(), "ledger.db")
		return open(t, sqldb.Config{DSN: path, Clock: o.Clock})
	}}
}

// SQLiteFile is the embedded target on one file at path, migrated at the first open: each
// Open is another handle on the same database, as test processes sharing one would have.
func SQLiteFile(path string) Target {
	return Target{Name: "sqlite", Open: func(t testing.TB, o Options) *sqldb.DB {
		t.Helper()
		return open(t, sqldb.Config{DSN: path, Clock: o.Clock})
	}}
}

func open(t testing.TB, cfg sqldb.Config) *sqldb.DB {
	t.Helper()
	if cfg.Clock != nil {
		// A clock in a package's slot (PackageEpoch) floors the database's reaper there.
		if k, ok := SlotOf(cfg.Clock()); ok {
			cfg.ClockFloor = SlotStart(k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := sqldb.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.DSN, err)
	}
	t.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatalf("migrator: %v", err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	return db
}

var (
	mssqlOnce sync.Once
	mssqlDSN  string
	mssqlWhy  string
	// mssqlMissing: no SQL Server; mssqlReported: the one skip line has been written.
	mssqlMissing, mssqlReported atomic.Bool
)

func mssqlTarget() Target {
	return Target{Name: "sqlserver", Open: func(t testing.TB, o Options) *sqldb.DB {
		t.Helper()
		mssqlOnce.Do(func() { mssqlDSN, mssqlWhy = findMSSQL() })
		if mssqlDSN == "" {
			t.Skip("sqlserver: " + mssqlWhy)
		}
		// This process's own database (processDatabase): cases of the package isolate
		// themselves by tenant (NewTenant), and other packages' reapers never reach it.
		return open(t, sqldb.Config{DSN: mssqlDSN, Clock: o.Clock})
	}}
}

// findMSSQL finds a SQL Server and returns the DSN of this test process's own database on
// it (processDatabase), or why there is none.
func findMSSQL() (dsn, why string) {
	dsn = os.Getenv("LEDGER_TEST_MSSQL_DSN")
	if dsn == "" {
		if dsn, why = startContainer(); dsn == "" {
			return "", why
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	own, err := processDatabase(ctx, dsn)
	if err != nil {
		// A server that answers but cannot give this process a database is a failure of the
		// setup, not a reason to skip: say it in the skip line all the same, loudly.
		return "", "SQL Server answered but this test process could not have a database of its own (" + err.Error() + ")"
	}
	return own, ""
}

// NewTenant creates a fresh tenant with a random id, so parallel cases never see each
// other's rows even on a shared database.
func NewTenant(t testing.TB, db *sqldb.DB) string {
	t.Helper()
	id := fmt.Sprintf("t-%s", ids.New().String()[:18])
	if err := tenancy.NewStore(db).EnsureTenant(context.Background(), id); err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	return id
}

// Clock is a settable clock for tests: time moves only when the test says so.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t.UTC().Truncate(time.Millisecond)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
