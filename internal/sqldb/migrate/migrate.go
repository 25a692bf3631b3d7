// Package migrate runs the embedded golang-migrate files on an open database, records each
// applied migration's declared kind, and says whether this binary may serve the schema it
// finds (rolling deploys, DESIGN.md section 8).
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	gomigrate "github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	migratesqlserver "github.com/golang-migrate/migrate/v4/database/sqlserver"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// SchemaState is where a database's schema stands against the embedded migrations.
type SchemaState struct {
	// Version is the applied migration version; 0 when none is applied.
	Version uint
	// Latest is the newest embedded migration.
	Latest uint
	// Dirty means a migration failed part way (see DirtyFix).
	Dirty bool
	// Dialect is the database's dialect name, which decides what a dirty version means.
	Dialect string
}

// DirtyFix says, for a dirty version, which version to force and why. SQLite runs each
// migration with its version row in one transaction (atomicSQLite), so this binary never
// leaves it dirty; a database an older binary left dirty had the migration rolled back, so
// the version before it is the truth. On SQL Server a migration in one transaction rolls
// back whole, but DDL outside one stays, so the operator has to look.
func (s SchemaState) DirtyFix() string {
	v, before := s.Version, int64(s.Version)-1
	if s.Dialect == "sqlite" {
		return fmt.Sprintf("SQLite rolled migration %d back when it stopped, so the database is at version %d: "+
			"run `ledger migrate force %d`, then `ledger migrate up`", v, before, before)
	}
	return fmt.Sprintf("migration %d stopped part way (or a `migrate down` from %d did); a migration inside one transaction "+
		"rolls back whole, other DDL stays: if it left nothing applied, run `ledger migrate force %d`, then `ledger migrate up`; "+
		"if you completed it by hand, run `ledger migrate force %d`", v, v+1, before, v)
}

// dirtyError is the error for a dirty schema: the version and what to do.
func (s SchemaState) dirtyError() error {
	return fmt.Errorf("schema version %d is dirty: %s", s.Version, s.DirtyFix())
}

// Current reports whether the schema is exactly the embedded one.
func (s SchemaState) Current() bool { return !s.Dirty && s.Version == s.Latest }

// Migrator runs golang-migrate over the embedded files. Call Close when done.
type Migrator struct {
	db      *sqldb.DB
	m       *gomigrate.Migrate
	latest  uint
	dialect string
	unlock  func()
	// release ends what golang-migrate holds: on SQL Server its own pool and the session
	// it pinned (see sqldb.DB.OwnPool); nothing on SQLite, whose migrate
	// driver would close the service's writer pool with it.
	release func()
}

// New prepares migrations on db. On SQLite it first takes an exclusive lock on a file
// beside the database, held until Close: golang-migrate's SQLite lock only works inside one
// process, and two `serve` processes may start together. SQL Server serialises runners
// itself with sp_getapplock.
func New(db *sqldb.DB) (*Migrator, error) {
	unlock := func() {}
	if db.File() != "" {
		var err error
		if unlock, err = lockFile(db.File() + ".lock"); err != nil {
			return nil, err
		}
	}
	m, latest, release, err := newMigrate(db)
	if err != nil {
		unlock()
		return nil, err
	}
	return &Migrator{db: db, m: m, latest: latest, dialect: db.Dialect.Name(), unlock: unlock, release: release}, nil
}

func newMigrate(db *sqldb.DB) (*gomigrate.Migrate, uint, func(), error) {
	src, err := iofs.New(db.Migrations(), ".")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	latest, err := latestVersion(src)
	if err != nil {
		return nil, 0, nil, err
	}
	open, ok := drivers[db.Dialect.Name()]
	if !ok {
		return nil, 0, nil, fmt.Errorf("prepare migrations: no migration driver for the %q dialect", db.Dialect.Name())
	}
	drv, release, err := open(db)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("prepare migrations: %w", err)
	}
	m, err := gomigrate.NewWithInstance("iofs", src, db.Dialect.Name(), drv)
	if err != nil {
		release()
		return nil, 0, nil, fmt.Errorf("prepare migrations: %w", err)
	}
	return m, latest, release, nil
}

// drivers open golang-migrate's driver on each dialect, by its name, with what closes it.
var drivers = map[string]func(db *sqldb.DB) (database.Driver, func(), error){
	sqldb.SQLServerName: sqlserverDriver,
	sqldb.SQLiteName:    sqliteDriver,
}

// sqlserverDriver runs on a pool of the migrator's own (sqldb.DB.OwnPool); the driver's
// Close closes the connection it pinned, then the pool.
func sqlserverDriver(db *sqldb.DB) (database.Driver, func(), error) {
	pool, err := db.OwnPool()
	if err != nil {
		return nil, nil, err
	}
	drv, err := migratesqlserver.WithInstance(pool, mssqlMigrateConfig())
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return drv, func() { _ = drv.Close() }, nil
}

// sqliteDriver runs on the service's writer, which its Close would close with it: nothing
// to release.
func sqliteDriver(db *sqldb.DB) (database.Driver, func(), error) {
	drv, err := migratesqlite.WithInstance(db.Raw().DB, &migratesqlite.Config{})
	if err != nil {
		return nil, nil, err
	}
	return &atomicSQLite{Driver: drv, db: db.Raw().DB}, func() {}, nil
}

// migrationsTable is golang-migrate's version table, which QualifyTable puts in dbo on SQL
// Server whatever the migration login's default schema: a user created WITH DEFAULT_SCHEMA
// (or an Entra group's user) would otherwise get its own copy, and serve, reading through
// the service login's default schema, would see version 0.
const migrationsTable = "schema_migrations"

// mssqlMigrateConfig is golang-migrate's SQL Server configuration: the version table in dbo.
func mssqlMigrateConfig() *migratesqlserver.Config {
	return &migratesqlserver.Config{SchemaName: "dbo"}
}

func latestVersion(src interface {
	First() (uint, error)
	Next(uint) (uint, error)
}) (uint, error) {
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("read embedded migrations: %w", err)
	}
	for {
		next, err := src.Next(v)
		if errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read embedded migrations: %w", err)
		}
		v = next
	}
}

// atomicSQLite commits each SQLite migration together with its version row. golang-migrate
// marks the version dirty, runs the migration, then marks it clean, each in a transaction
// of its own: a process killed during the migration (which SQLite rolls back) left the
// version dirty at a migration that was not applied, and `migrate force` to that version
// then skipped it. Here the dirty mark is not written; the migration's transaction writes
// the clean version row itself, so a crash leaves the previous version or the new one,
// both clean.
type atomicSQLite struct {
	database.Driver
	db *sql.DB
	// pending is the version golang-migrate marked dirty and has not yet marked clean;
	// written says the migration's transaction already recorded it.
	pending *int
	written bool
}

func (d *atomicSQLite) SetVersion(version int, dirty bool) error {
	switch {
	case dirty:
		d.pending, d.written = &version, false
		return nil
	case d.pending != nil && *d.pending == version:
		done := d.written
		d.pending, d.written = nil, false
		if done {
			return nil
		}
	}
	// Force, or a migration without a body: write the row as golang-migrate would.
	return d.Driver.SetVersion(version, dirty)
}

func (d *atomicSQLite) Run(migration io.Reader) error {
	if d.pending == nil {
		return d.Driver.Run(migration)
	}
	body, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	tx, err := d.db.Begin()
	if err != nil {
		return &database.Error{OrigErr: err, Err: "transaction start failed"}
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(string(body)); err != nil {
		return &database.Error{OrigErr: err, Query: body}
	}
	if _, err := tx.Exec(`DELETE FROM ` + migratesqlite.DefaultMigrationsTable); err != nil {
		return &database.Error{OrigErr: err, Err: "record the schema version"}
	}
	if v := *d.pending; v >= 0 { // a down migration to nothing leaves no row
		if _, err := tx.Exec(`INSERT INTO `+migratesqlite.DefaultMigrationsTable+` (version, dirty) VALUES (?, 0)`, v); err != nil {
			return &database.Error{OrigErr: err, Err: "record the schema version"}
		}
	}
	if err := tx.Commit(); err != nil {
		return &database.Error{OrigErr: err, Err: "transaction commit failed"}
	}
	d.written = true
	return nil
}

// Close releases the migrator and its lock. It does not close the database.
func (mg *Migrator) Close() {
	mg.release()
	mg.unlock()
}

// State reads the schema version.
func (mg *Migrator) State() (SchemaState, error) {
	v, dirty, err := mg.m.Version()
	if errors.Is(err, gomigrate.ErrNilVersion) {
		return SchemaState{Latest: mg.latest, Dialect: mg.dialect}, nil
	}
	if err != nil {
		return SchemaState{}, fmt.Errorf("read schema version: %w", err)
	}
	return SchemaState{Version: v, Latest: mg.latest, Dirty: dirty, Dialect: mg.dialect}, nil
}

// Up applies every pending migration.
func (mg *Migrator) Up() error {
	_, err := mg.UpApplied()
	return err
}

// UpApplied applies every pending migration and returns those it applied, with their
// declared kinds. A schema newer than this binary's is left alone: nil when every newer
// migration is recorded additive (this binary can serve it), else a *SchemaError naming
// the breaking one and what to deploy (golang-migrate would only say that it has no file
// for the version).
func (mg *Migrator) UpApplied() ([]Migration, error) {
	// golang-migrate's calls take no context; neither do these short reads and writes.
	ctx := context.Background()
	before, err := mg.State()
	if err != nil {
		return nil, err
	}
	if !before.Dirty && before.Version > before.Latest {
		_, _, err := Servable(ctx, mg.db)
		return nil, err
	}
	if err := mg.explainDirty(ignoreNoChange(mg.m.Up())); err != nil {
		return nil, mg.explainExisting(ctx, before, err)
	}
	after, err := mg.State()
	if err != nil {
		return nil, err
	}
	if err := RecordKinds(ctx, mg.db); err != nil {
		return nil, err
	}
	migs, err := ReadMigrations(mg.db.Migrations())
	if err != nil {
		return nil, err
	}
	var applied []Migration
	for _, m := range migs {
		if m.Version > before.Version && m.Version <= after.Version {
			applied = append(applied, m)
		}
	}
	return applied, nil
}

// alreadyExists are the messages of a migration that creates what the database already
// has: SQLite's, and SQL Server's 2714 (object), 2705 (column), 1913 (index), 15023 (role).
var alreadyExists = []string{"already exists", "duplicate column name", "There is already an object named",
	"Column names in each table must be unique", "an index or statistics with name", "User, group, or role"}

// explainExisting adds the way out to a migration that failed because what it creates is
// there already: the version was set below the schema (a wrong `migrate force`), and
// `migrate up` cannot get past it. The recorded kinds still name the migrations applied.
func (mg *Migrator) explainExisting(ctx context.Context, before SchemaState, err error) error {
	found := false
	for _, m := range alreadyExists {
		found = found || strings.Contains(err.Error(), m)
	}
	if !found {
		return err
	}
	next := before.Version + 1
	if migs, rerr := ReadMigrations(mg.db.Migrations()); rerr == nil {
		for _, m := range migs {
			if m.Version > before.Version {
				next = m.Version
				break
			}
		}
	}
	var recorded *int64
	_ = mg.db.Raw().GetContext(ctx, &recorded, `SELECT MAX(Version) FROM `+kindsTable(mg.db))
	if recorded != nil && uint(*recorded) > before.Version {
		return fmt.Errorf("%w; migration %d creates what the database already has: the version was set to %d (a `migrate force`?) "+
			"but the database records migrations up to %d as applied: run `ledger migrate force %d`, then `ledger migrate up`",
			err, next, before.Version, *recorded, *recorded)
	}
	return fmt.Errorf("%w; migration %d creates what the database already has, so the schema is past version %d (a `migrate force` "+
		"to an older version?): find the newest migration whose changes are all in the database, run `ledger migrate force` "+
		"with its number, then `ledger migrate up`", err, next, before.Version)
}

// Goto applies or reverts migrations until the schema is at version v.
func (mg *Migrator) Goto(v uint) error {
	if err := mg.explainDirty(ignoreNoChange(mg.m.Migrate(v))); err != nil {
		return err
	}
	return RecordKinds(context.Background(), mg.db)
}

// Down reverts n migrations.
func (mg *Migrator) Down(n int) error {
	if n <= 0 {
		return fmt.Errorf("migrate down: N must be positive, not %d", n)
	}
	if err := mg.explainDirty(ignoreNoChange(mg.m.Steps(-n))); err != nil {
		return err
	}
	return RecordKinds(context.Background(), mg.db)
}

// explainDirty replaces golang-migrate's "Fix and force version." with the version to force.
func (mg *Migrator) explainDirty(err error) error {
	var d gomigrate.ErrDirty
	if errors.As(err, &d) && d.Version >= 0 {
		return SchemaState{Version: uint(d.Version), Latest: mg.latest, Dirty: true, Dialect: mg.dialect}.dirtyError()
	}
	return err
}

// Force sets the version without running anything and clears the dirty flag. The kinds
// recorded are left as they are: after a force below the real schema they still say which
// migrations were applied, which is how `migrate up` then says where to force back to.
// The next successful migrate drops those past its version.
func (mg *Migrator) Force(v int) error { return mg.m.Force(v) }

func ignoreNoChange(err error) error {
	if errors.Is(err, gomigrate.ErrNoChange) {
		return nil
	}
	return err
}

// ReadState reads where the schema stands, without the migration lock and without
// writing: golang-migrate keeps one row in schema_migrations.
func ReadState(ctx context.Context, db *sqldb.DB) (SchemaState, error) {
	src, err := iofs.New(db.Migrations(), ".")
	if err != nil {
		return SchemaState{}, fmt.Errorf("read embedded migrations: %w", err)
	}
	latest, err := latestVersion(src)
	if err != nil {
		return SchemaState{}, err
	}
	st := SchemaState{Latest: latest, Dialect: db.Dialect.Name()}
	var row struct {
		Version int64 `db:"version"`
		Dirty   bool  `db:"dirty"`
	}
	err = db.RawReader().GetContext(ctx, &row, `SELECT version, dirty FROM `+db.Dialect.QualifyTable(migrationsTable))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil && (strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "Invalid object name")):
		return st, nil
	case err != nil:
		return SchemaState{}, fmt.Errorf("read schema version: %w", db.Dialect.MapError(err))
	}
	st.Version, st.Dirty = uint(row.Version), row.Dirty
	return st, nil
}

// lockFile takes an exclusive advisory lock on path, waiting for another process to let go.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open migration lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
