// Package check is `ledger check`: what an operator's database must be for the service to
// serve it or migrate it (server version, options, rights, the schema version; the file,
// WAL and durability on SQLite), each a query and a pure evaluation with the fix to apply.
package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// Purpose says what the database is being checked for: serving needs data rights and a
// current schema, migrating needs DDL rights and may find the schema behind.
type Purpose int

const (
	// ForServe checks the database as `ledger serve` uses it.
	ForServe Purpose = iota
	// ForMigrate checks it as `ledger migrate up|down` uses it.
	ForMigrate
)

// String is the purpose's name in reports and flags.
func (p Purpose) String() string {
	if p == ForMigrate {
		return "migrate"
	}
	return "serve"
}

// ParsePurpose reads a purpose's name ("serve" or "migrate").
func ParsePurpose(s string) (Purpose, error) {
	switch s {
	case "serve":
		return ForServe, nil
	case "migrate":
		return ForMigrate, nil
	}
	return ForServe, fmt.Errorf("check for %q: say serve or migrate", s)
}

// Status is a check's outcome.
type Status string

const (
	// StatusOK: as the service needs it.
	StatusOK Status = "ok"
	// StatusWarn: supported, but not what is recommended (the fix says how).
	StatusWarn Status = "warn"
	// StatusFail: the service cannot work correctly; a required check that fails stops it.
	StatusFail Status = "fail"
	// StatusUnknown: the login cannot read what the check needs; the fix names the grant.
	// It never stops the service on its own.
	StatusUnknown Status = "unknown"
)

// Result is one check: one line of `ledger check`.
type Result struct {
	// Name is stable, for pipelines (e.g. "compatibility-level").
	Name string `json:"name"`
	// Required: a failure stops `serve` and `migrate` and makes `ledger check` exit 1.
	Required bool   `json:"required"`
	Status   Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do; empty when there is nothing to do.
	Fix string `json:"fix,omitempty"`
}

// Failed reports whether the result stops the service.
func (r Result) Failed() bool { return r.Required && r.Status == StatusFail }

// Report is the outcome of every check of one database.
type Report struct {
	Dialect string   `json:"dialect"`
	Purpose string   `json:"purpose"`
	Checks  []Result `json:"checks"`
}

// OK reports whether no required check failed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Failed() {
			return false
		}
	}
	return true
}

// Err is nil when the report is OK, and otherwise names every failed check with its fix,
// on one line, for `serve` and `migrate` to refuse with.
func (r Report) Err() error {
	var parts []string
	for _, c := range r.Checks {
		if c.Failed() {
			parts = append(parts, fmt.Sprintf("%s: %s (fix: %s)", c.Name, c.Detail, c.Fix))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("the database check failed (`ledger check` lists every check): %s", strings.Join(parts, "; "))
}

// checker is one check that can run against an open database.
type checker interface {
	run(ctx context.Context, db *sqldb.DB, p Purpose, memo map[string]any) (Result, bool)
}

// check is a check made of one query and a pure evaluation of its rows, so each evaluation
// is tested with synthetic rows and the query is read beside its reading check.
type check[T any] struct {
	name     string
	required bool
	// purposes lists when the check runs; empty means always.
	purposes []Purpose
	query    string
	// writer runs the query on the writer pool (SQLite pragmas that differ per pool).
	writer bool
	eval   func(rows []T, p Purpose) Result
}

func (c check[T]) run(ctx context.Context, db *sqldb.DB, p Purpose, memo map[string]any) (Result, bool) {
	if !runsFor(c.purposes, p) {
		return Result{}, false
	}
	var res Result
	rows, err := cachedRows[T](ctx, db, c.query, c.writer, memo)
	if err != nil {
		res = cannotRead(db.Dialect.MapError(err))
	} else {
		res = c.eval(rows, p)
	}
	res.Name, res.Required = c.name, c.required
	return res, true
}

// cachedRows runs query once per check run: several checks read the same row.
func cachedRows[T any](ctx context.Context, db *sqldb.DB, query string, writer bool, memo map[string]any) ([]T, error) {
	if rows, ok := memo[query].([]T); ok {
		return rows, nil
	}
	pool := db.RawReader()
	if writer {
		pool = db.Raw()
	}
	var rows []T
	// No arguments: the text goes to SQL Server as a plain batch, not through
	// sp_executesql, on a pooled connection of the service's own pool (so with the
	// session options every service connection has).
	if err := sqlx.SelectContext(ctx, pool, &rows, query); err != nil {
		return nil, err
	}
	memo[query] = rows
	return rows, nil
}

// probe is a check that reads something other than rows (a file, the schema version).
type probe struct {
	name     string
	required bool
	purposes []Purpose
	do       func(ctx context.Context, db *sqldb.DB, p Purpose) Result
}

func (c probe) run(ctx context.Context, db *sqldb.DB, p Purpose, _ map[string]any) (Result, bool) {
	if !runsFor(c.purposes, p) {
		return Result{}, false
	}
	res := c.do(ctx, db, p)
	res.Name, res.Required = c.name, c.required
	return res, true
}

func runsFor(purposes []Purpose, p Purpose) bool {
	return len(purposes) == 0 || slices.Contains(purposes, p)
}

// cannotRead reports a check whose query failed: it says so instead of failing obscurely.
func cannotRead(err error) Result {
	fix := "run `ledger check` as a login that can read the catalog views named in the check, or grant VIEW DEFINITION ON SCHEMA::dbo to this one"
	if errors.Is(err, sqldb.ErrUnavailable) {
		fix = "make sure the database answers, then run the check again"
	}
	return Result{Status: StatusUnknown, Detail: "could not read: " + oneLine(err.Error()), Fix: fix}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// checksOf are each dialect's checks, by its name.
var checksOf = map[string][]checker{
	sqldb.SQLServerName: mssqlChecks,
	sqldb.SQLiteName:    sqliteChecks,
}

// Run runs every check of the database's dialect for purpose p.
func Run(ctx context.Context, db *sqldb.DB, p Purpose) Report {
	checks := checksOf[db.Dialect.Name()] // none for a dialect that has no checks
	report := Report{Dialect: db.Dialect.Name(), Purpose: p.String()}
	memo := map[string]any{}
	for _, c := range checks {
		if res, ran := c.run(ctx, db, p, memo); ran {
			report.Checks = append(report.Checks, res)
		}
	}
	return report
}

// Database opens the database named by cfg and checks it for purpose p. A SQLite
// file that does not exist is reported, not created. The error is for a database that
// cannot be opened at all.
func Database(ctx context.Context, cfg sqldb.Config, p Purpose) (Report, error) {
	if !sqldb.IsSQLServer(cfg.DSN) {
		path, err := sqldb.SQLitePath(cfg.DSN)
		if err != nil {
			return Report{}, fmt.Errorf("--db: %w", err)
		}
		st := statFile(path)
		if !st.exists && st.err == nil && p == ForMigrate {
			// `migrate up` creates the embedded database: ready to migrate when it can.
			res := newFileCheck(path)
			res.Name, res.Required = "database-file", true
			return Report{Dialect: sqldb.SQLiteName, Purpose: p.String(), Checks: []Result{res}}, nil
		}
		if res := sqliteFileCheck(st); res.Status == StatusFail {
			res.Name, res.Required = "database-file", true
			return Report{Dialect: sqldb.SQLiteName, Purpose: p.String(), Checks: []Result{res}}, nil
		}
	}
	db, err := sqldb.Open(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	defer db.Close()
	return Run(ctx, db, p), nil
}

// schemaCheck reads the schema version (golang-migrate's schema_migrations) when serving:
// a migration run is what changes it.
var schemaCheck = probe{
	name:     "schema",
	required: true,
	purposes: []Purpose{ForServe},
	do: func(ctx context.Context, db *sqldb.DB, _ Purpose) Result {
		st, newer, err := migrate.Servable(ctx, db)
		if err != nil && !migrate.IsSchemaError(err) {
			return cannotRead(err)
		}
		return evalSchema(st, newer, err)
	},
}

// evalSchema judges where the schema stands. A schema newer than this binary's passes with a
// warning when every newer migration is additive (a rolling deploy: this binary serves it);
// servErr is Servable's verdict.
func evalSchema(st migrate.SchemaState, newer []migrate.NewerMigration, servErr error) Result {
	var se *migrate.SchemaError
	if st.Version > st.Latest && !st.Dirty {
		if errors.As(servErr, &se) && se.Breaking != nil {
			return Result{Status: StatusFail,
				Detail: fmt.Sprintf("version %d is newer than this binary's %d, and migration %d (%s) is not additive",
					st.Version, st.Latest, se.Breaking.Version, se.Breaking.Title),
				Fix: fmt.Sprintf("deploy a binary whose schema version (`ledger --version`) is at least %d", st.Version)}
		}
		if servErr == nil && len(newer) > 0 {
			return Result{Status: StatusWarn,
				Detail: fmt.Sprintf("version %d is newer than this binary's %d; every newer migration is additive, so this binary serves it", st.Version, st.Latest),
				Fix:    "finish the rolling deploy: replace this binary with the one that migrated"}
		}
	}
	return evalSchemaState(st)
}

func evalSchemaState(st migrate.SchemaState) Result {
	switch {
	case st.Dirty:
		return Result{Status: StatusFail,
			Detail: fmt.Sprintf("version %d is dirty: a migration failed part way", st.Version),
			Fix:    st.DirtyFix()}
	case st.Version < st.Latest:
		return Result{Status: StatusFail,
			Detail: fmt.Sprintf("version %d, this binary needs %d", st.Version, st.Latest),
			Fix:    "run `ledger migrate up` (or start `ledger serve --migrate`)"}
	case st.Version > st.Latest:
		return Result{Status: StatusFail,
			Detail: fmt.Sprintf("version %d is newer than this binary's %d", st.Version, st.Latest),
			Fix:    "deploy the binary that migrated it"}
	}
	return Result{Status: StatusOK, Detail: fmt.Sprintf("version %d of %d, not dirty", st.Version, st.Latest)}
}

// fileState is what sqliteFileCheck looks at, so its evaluation needs no file system.
type fileState struct {
	path        string
	exists      bool
	regular     bool
	size        int64
	writable    bool // the file can be opened for writing
	dirWritable bool // WAL creates <file>-wal and <file>-shm beside it
	err         error
}

func statFile(path string) fileState {
	st := fileState{path: path}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return st
	}
	if err != nil {
		st.err = err
		return st
	}
	st.exists, st.regular, st.size = true, fi.Mode().IsRegular(), fi.Size()
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		st.writable = true
		f.Close()
	}
	dir := path[:strings.LastIndexByte(path, os.PathSeparator)+1]
	if dir == "" {
		dir = "."
	}
	if f, err := os.CreateTemp(dir, ".ledger-check-*"); err == nil {
		st.dirWritable = true
		name := f.Name()
		f.Close()
		os.Remove(name)
	}
	return st
}

// newFileCheck judges a SQLite path where no database is yet, for `migrate up`, which
// creates the file and any missing directory: it can when the nearest directory that
// exists lets this user create a file in it.
func newFileCheck(path string) Result {
	dir := filepath.Dir(path)
	for {
		if fi, err := os.Stat(dir); err == nil {
			if !fi.IsDir() {
				return Result{Status: StatusFail, Detail: fmt.Sprintf("no database at %s, and %s is not a directory", path, dir),
					Fix: "point --db / LEDGER_DB at a path in a directory"}
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".ledger-check-*")
	if err != nil {
		return Result{Status: StatusFail, Detail: fmt.Sprintf("no database at %s, and %s does not let this user create one: %v", path, dir, err),
			Fix: "give the user write access to the directory, or choose another --db"}
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return Result{Status: StatusOK, Detail: fmt.Sprintf("no database at %s yet: `ledger migrate up` creates it", path)}
}
