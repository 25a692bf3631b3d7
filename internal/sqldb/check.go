package sqldb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
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

// CheckStatus is a check's outcome.
type CheckStatus string

const (
	// StatusOK: as the service needs it.
	StatusOK CheckStatus = "ok"
	// StatusWarn: supported, but not what is recommended (the fix says how).
	StatusWarn CheckStatus = "warn"
	// StatusFail: the service cannot work correctly; a required check that fails stops it.
	StatusFail CheckStatus = "fail"
	// StatusUnknown: the login cannot read what the check needs; the fix names the grant.
	// It never stops the service on its own.
	StatusUnknown CheckStatus = "unknown"
)

// CheckResult is one check: one line of `ledger check`.
type CheckResult struct {
	// Name is stable, for pipelines (e.g. "compatibility-level").
	Name string `json:"name"`
	// Required: a failure stops `serve` and `migrate` and makes `ledger check` exit 1.
	Required bool        `json:"required"`
	Status   CheckStatus `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do; empty when there is nothing to do.
	Fix string `json:"fix,omitempty"`
}

// Failed reports whether the result stops the service.
func (r CheckResult) Failed() bool { return r.Required && r.Status == StatusFail }

// CheckReport is the outcome of every check of one database.
type CheckReport struct {
	Dialect string        `json:"dialect"`
	Purpose string        `json:"purpose"`
	Checks  []CheckResult `json:"checks"`
}

// OK reports whether no required check failed.
func (r CheckReport) OK() bool {
	for _, c := range r.Checks {
		if c.Failed() {
			return false
		}
	}
	return true
}

// Err is nil when the report is OK, and otherwise names every failed check with its fix,
// on one line, for `serve` and `migrate` to refuse with.
func (r CheckReport) Err() error {
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
	run(ctx context.Context, db *DB, p Purpose, memo map[string]any) (CheckResult, bool)
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
	eval   func(rows []T, p Purpose) CheckResult
}

func (c check[T]) run(ctx context.Context, db *DB, p Purpose, memo map[string]any) (CheckResult, bool) {
	if !runsFor(c.purposes, p) {
		return CheckResult{}, false
	}
	var res CheckResult
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
func cachedRows[T any](ctx context.Context, db *DB, query string, writer bool, memo map[string]any) ([]T, error) {
	if rows, ok := memo[query].([]T); ok {
		return rows, nil
	}
	pool := db.r
	if writer {
		pool = db.w
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
	do       func(ctx context.Context, db *DB, p Purpose) CheckResult
}

func (c probe) run(ctx context.Context, db *DB, p Purpose, _ map[string]any) (CheckResult, bool) {
	if !runsFor(c.purposes, p) {
		return CheckResult{}, false
	}
	res := c.do(ctx, db, p)
	res.Name, res.Required = c.name, c.required
	return res, true
}

func runsFor(purposes []Purpose, p Purpose) bool {
	return len(purposes) == 0 || slices.Contains(purposes, p)
}

// cannotRead reports a check whose query failed: it says so instead of failing obscurely.
func cannotRead(err error) CheckResult {
	fix := "run `ledger check` as a login that can read the catalog views named in the check, or grant VIEW DEFINITION ON SCHEMA::dbo to this one"
	if errors.Is(err, ErrUnavailable) {
		fix = "make sure the database answers, then run the check again"
	}
	return CheckResult{Status: StatusUnknown, Detail: "could not read: " + oneLine(err.Error()), Fix: fix}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Check runs every check of the database's dialect for purpose p.
func (db *DB) Check(ctx context.Context, p Purpose) CheckReport {
	checks := sqliteChecks
	if db.Dialect.Name() == "sqlserver" {
		checks = mssqlChecks
	}
	report := CheckReport{Dialect: db.Dialect.Name(), Purpose: p.String()}
	memo := map[string]any{}
	for _, c := range checks {
		if res, ran := c.run(ctx, db, p, memo); ran {
			report.Checks = append(report.Checks, res)
		}
	}
	return report
}

// CheckDatabase opens the database named by cfg and checks it for purpose p. A SQLite
// file that does not exist is reported, not created. The error is for a database that
// cannot be opened at all.
func CheckDatabase(ctx context.Context, cfg Config, p Purpose) (CheckReport, error) {
	if !IsSQLServer(cfg.DSN) {
		path, err := SQLitePath(cfg.DSN)
		if err != nil {
			return CheckReport{}, fmt.Errorf("--db: %w", err)
		}
		st := statFile(path)
		if !st.exists && st.err == nil && p == ForMigrate {
			// `migrate up` creates the embedded database: ready to migrate when it can.
			res := newFileCheck(path)
			res.Name, res.Required = "database-file", true
			return CheckReport{Dialect: "sqlite", Purpose: p.String(), Checks: []CheckResult{res}}, nil
		}
		if res := sqliteFileCheck(st); res.Status == StatusFail {
			res.Name, res.Required = "database-file", true
			return CheckReport{Dialect: "sqlite", Purpose: p.String(), Checks: []CheckResult{res}}, nil
		}
	}
	db, err := Open(ctx, cfg)
	if err != nil {
		return CheckReport{}, err
	}
	defer db.Close()
	return db.Check(ctx, p), nil
}

// schemaCheck reads the schema version (golang-migrate's schema_migrations) when serving:
// a migration run is what changes it.
var schemaCheck = probe{
	name:     "schema",
	required: true,
	purposes: []Purpose{ForServe},
	do: func(ctx context.Context, db *DB, _ Purpose) CheckResult {
		st, newer, err := db.Servable(ctx)
		if err != nil && !IsSchemaError(err) {
			return cannotRead(err)
		}
		return evalSchema(st, newer, err)
	},
}

// evalSchema judges where the schema stands. A schema newer than this binary's passes with a
// warning when every newer migration is additive (a rolling deploy: this binary serves it);
// servErr is Servable's verdict.
func evalSchema(st SchemaState, newer []NewerMigration, servErr error) CheckResult {
	var se *SchemaError
	if st.Version > st.Latest && !st.Dirty {
		if errors.As(servErr, &se) && se.Breaking != nil {
			return CheckResult{Status: StatusFail,
				Detail: fmt.Sprintf("version %d is newer than this binary's %d, and migration %d (%s) is not additive",
					st.Version, st.Latest, se.Breaking.Version, se.Breaking.Title),
				Fix: fmt.Sprintf("deploy a binary whose schema version (`ledger --version`) is at least %d", st.Version)}
		}
		if servErr == nil && len(newer) > 0 {
			return CheckResult{Status: StatusWarn,
				Detail: fmt.Sprintf("version %d is newer than this binary's %d; every newer migration is additive, so this binary serves it", st.Version, st.Latest),
				Fix:    "finish the rolling deploy: replace this binary with the one that migrated"}
		}
	}
	return evalSchemaState(st)
}

func evalSchemaState(st SchemaState) CheckResult {
	switch {
	case st.Dirty:
		return CheckResult{Status: StatusFail,
			Detail: fmt.Sprintf("version %d is dirty: a migration failed part way", st.Version),
			Fix:    st.DirtyFix()}
	case st.Version < st.Latest:
		return CheckResult{Status: StatusFail,
			Detail: fmt.Sprintf("version %d, this binary needs %d", st.Version, st.Latest),
			Fix:    "run `ledger migrate up` (or start `ledger serve --migrate`)"}
	case st.Version > st.Latest:
		return CheckResult{Status: StatusFail,
			Detail: fmt.Sprintf("version %d is newer than this binary's %d", st.Version, st.Latest),
			Fix:    "deploy the binary that migrated it"}
	}
	return CheckResult{Status: StatusOK, Detail: fmt.Sprintf("version %d of %d, not dirty", st.Version, st.Latest)}
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
func newFileCheck(path string) CheckResult {
	dir := filepath.Dir(path)
	for {
		if fi, err := os.Stat(dir); err == nil {
			if !fi.IsDir() {
				return CheckResult{Status: StatusFail, Detail: fmt.Sprintf("no database at %s, and %s is not a directory", path, dir),
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
		return CheckResult{Status: StatusFail, Detail: fmt.Sprintf("no database at %s, and %s does not let this user create one: %v", path, dir, err),
			Fix: "give the user write access to the directory, or choose another --db"}
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return CheckResult{Status: StatusOK, Detail: fmt.Sprintf("no database at %s yet: `ledger migrate up` creates it", path)}
}
