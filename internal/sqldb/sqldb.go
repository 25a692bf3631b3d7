// Package sqldb opens the service's database (SQL Server or the embedded SQLite) and runs
// transactions with the tenant set, the clock read once, and retryable failures retried.
// Everything dialect-specific below the stores lives here.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// Sentinel errors that MapError produces; stores turn them into domain errors.
var (
	// ErrNotFound: the statement matched no row.
	ErrNotFound = errors.New("no matching row")
	// ErrBadReference: a foreign key refused the write.
	ErrBadReference = errors.New("foreign key violation")
	// ErrRefused: a trigger or CHECK constraint refused the write.
	ErrRefused = errors.New("refused by a constraint or trigger")
	// ErrRetryable: a deadlock or a busy database; the whole transaction may be run again.
	ErrRetryable = errors.New("transient database conflict")
	// ErrUnavailable: the database cannot be reached or stayed locked.
	ErrUnavailable = errors.New("database unavailable")
	// ErrCollationConflict: a statement compared strings of two collations the server
	// cannot reconcile (SQL Server 468 and its kin), typically a table variable's string
	// column, which takes the database's default collation, against a BIN2 column. It is a
	// defect of the statement, not of the request or the database: no retry helps, the
	// request answers a logged 500, and the error names the statement (Tx adds it).
	ErrCollationConflict = errors.New("collation conflict in a statement (a table variable or comparison needs COLLATE)")
)

// ConflictError reports a unique-key violation. Constraint holds the index or constraint
// name (SQL Server) or the column list (SQLite), so stores can tell which key collided.
type ConflictError struct {
	Constraint string
	cause      error
}

func (e *ConflictError) Error() string { return "unique key violation on " + e.Constraint }
func (e *ConflictError) Unwrap() error { return e.cause }

// mapped reports whether err already carries a mapped meaning, so mapping it again (a
// transaction's error passing through Write) keeps it as it is.
func mapped(err error) bool {
	var c *ConflictError
	return errors.As(err, &c) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadReference) ||
		errors.Is(err, ErrRefused) || errors.Is(err, ErrRetryable) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrCollationConflict)
}

// StatementError names the statement an error came from, for errors that are the
// statement's own defect (ErrCollationConflict): the log line of the 500 then says which
// statement to fix.
type StatementError struct {
	Statement string // the statement's first line that is not a DECLARE, cut to 120 bytes
	Err       error
}

func (e *StatementError) Error() string { return fmt.Sprintf("statement %q: %v", e.Statement, e.Err) }
func (e *StatementError) Unwrap() error { return e.Err }

// nameStatement wraps a mapped error with the statement it came from when the error is
// a defect of the statement.
func nameStatement(err error, query string) error {
	if err == nil || !errors.Is(err, ErrCollationConflict) || namesStatement(err) {
		return err
	}
	return &StatementError{Statement: statementName(query), Err: err}
}

// namesStatement reports whether err already names its statement. It is apart from
// nameStatement so that the target errors.As needs is allocated only for an error that
// gets this far, not for every statement.
func namesStatement(err error) bool {
	var se *StatementError
	return errors.As(err, &se)
}

// statementName is the statement's first line that does the work: table-variable
// declarations and comments in front of it say nothing about which statement it is.
func statementName(query string) string {
	name := strings.TrimSpace(query)
	for _, line := range strings.Split(query, "\n") {
		line = strings.TrimSpace(line)
		up := strings.ToUpper(line)
		if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(up, "DECLARE ") ||
			strings.HasPrefix(up, "SET NOCOUNT") {
			continue
		}
		name = line
		break
	}
	if len(name) > 120 {
		name = name[:120]
	}
	return name
}

// IsConflict reports whether err is a unique violation whose constraint text contains any
// of the given markers (an index name on SQL Server, a column list on SQLite). With no
// markers it matches any unique violation.
func IsConflict(err error, markers ...string) bool {
	var c *ConflictError
	if !errors.As(err, &c) {
		return false
	}
	if len(markers) == 0 {
		return true
	}
	for _, m := range markers {
		if strings.Contains(c.Constraint, m) {
			return true
		}
	}
	return false
}

// Clock returns the current time. A nil Clock means the database's clock decides, which is
// what production uses; tests inject one.
type Clock func() time.Time

// DB is an open database: a writer pool, a reader pool (the same pool on SQL Server) and
// the dialect that knows its SQL.
type DB struct {
	Dialect Dialect
	w       *sqlx.DB
	r       *sqlx.DB
	clock   Clock
	log     *slog.Logger
	// clockFloor is Config.ClockFloor.
	clockFloor time.Time
	// migrations, when set, replaces the embedded migrations (Config.Migrations).
	migrations fs.FS
	// sqlitePath is the database file, used for the cross-process migration lock.
	sqlitePath string
	// file is the SQLite file as opened, checked by readiness and the writer (fileid.go).
	file *sqliteFile
	// writerPragmas are the pragmas the committer's own connection is opened with
	// (ownconn.go, libconn.go): the writer pool's DSN's, but temp_store=FILE
	// (walbatch_temp.go); w stays for maintenance and tests (Raw).
	writerPragmas []string
	// readerPragmas are the pragmas SQLite's readers are opened with (the reader pool's
	// DSN's), and readers those readers (readerpool.go); r stays for maintenance and
	// readiness (RawReader, Ping).
	readerPragmas []string
	readers       *readerPool
	// plans are the scan plans of every statement's answers (scan.go).
	plans scanPlans
	// group runs SQLite write transactions in groups (see committer).
	group *committer
	// ck is SQLite's background checkpoint connection, and ckpt its checkpointer.
	ck   *sqlx.DB
	ckpt *checkpointer
	// hook is the test's statement hook (SetStatementHook), nil in production.
	hook atomic.Pointer[hookBox]
	obs  atomic.Pointer[Observer] // metrics (observer.go)
}

// Config says what to open.
type Config struct {
	// DSN is "sqlserver://…" for SQL Server, or a SQLite file path or "file:" URI (see SQLitePath).
	DSN string
	// SQLiteSync is "normal" (default) or "full".
	SQLiteSync string
	// BusyTimeout is how long a SQLite writer waits for another process's lock
	// (DefaultBusyTimeout when zero).
	BusyTimeout time.Duration
	// Clock overrides the database clock (tests).
	Clock Clock
	// ClockFloor is where an injected clock's range starts (tests, dbtest.PackageEpoch): rows
	// timed before it belong to another test process sharing the database, whose clock runs
	// in an earlier range, and the reaper leaves their leases alone. Zero: no floor.
	ClockFloor time.Time
	// Logger receives retry and maintenance messages; nil means slog.Default().
	Logger *slog.Logger
	// Migrations replaces the embedded migrations of the dialect (tests: a binary built
	// with fewer or more migrations than this one).
	Migrations fs.FS
}

// ClockFloor is Config.ClockFloor: zero unless a test's injected clock runs in a range of
// its own.
func (db *DB) ClockFloor() time.Time { return db.clockFloor }

// Open opens the database named by cfg.DSN. It does not migrate.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var (
		db  *DB
		err error
	)
	if IsSQLServer(cfg.DSN) {
		db, err = openMSSQL(ctx, cfg.DSN)
	} else {
		var path string
		if path, err = SQLitePath(cfg.DSN); err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		db, err = openSQLite(ctx, path, cfg.SQLiteSync, cfg.BusyTimeout)
	}
	if err != nil {
		return nil, err
	}
	db.clock = cfg.Clock
	db.clockFloor = cfg.ClockFloor
	db.log = log
	db.migrations = cfg.Migrations
	if db.Dialect.Embedded() {
		db.readers = newReaderPool(maxReaders, func() (*ownConn, error) {
			return openOwnConn(db, db.readerPragmas, beginReadSQL, maxReaderStmts, "")
		})
		db.ckpt = newCheckpointer(db.ck, log)
		db.group = newCommitter(db)
	}
	return db, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	if db.group != nil {
		db.group.close()
	}
	if db.ckpt != nil {
		db.ckpt.close()
	}
	if db.readers != nil {
		db.readers.close()
	}
	err := db.w.Close()
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	return err
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", db.Dialect.MapError(err))
	}
	return nil
}

// Probe checks that the database takes writes: on SQLite it takes the write lock (a
// process holding it past the busy timeout makes the service unavailable, not only slow).
func (db *DB) Probe(ctx context.Context) error {
	if err := db.Ping(ctx); err != nil {
		return err
	}
	if db.group == nil {
		return nil
	}
	if err := db.checkFile(); err != nil {
		return err
	}
	if err := db.writesFailing(); err != nil {
		return err
	}
	if err := db.Write(ctx, MaintenanceScope(), func(*Tx) error { return nil }); err != nil {
		return fmt.Errorf("take the write lock: %w", err)
	}
	return nil
}

// Fatal is closed when the database can no longer be used by this process and it must exit
// (non-zero): on SQLite, when the writer gave up (ErrWriterBroken). Never closed on SQL
// Server.
func (db *DB) Fatal() <-chan struct{} {
	if db.group == nil {
		return nil
	}
	return db.group.fatal
}

// Raw returns the writer pool, for maintenance code and tests that must run SQL directly.
func (db *DB) Raw() *sqlx.DB { return db.w }

// Logger is the logger the database was opened with.
func (db *DB) Logger() *slog.Logger { return db.log }

// Tx is one transaction. The tenant (or the maintenance bypass) is already set on it.
// Its ExecContext, GetContext and SelectContext return errors already mapped by the
// dialect (ErrNotFound, *ConflictError, ErrRetryable, …), so no caller maps by hand and
// a recovery path that tests for a conflict sees one on every dialect. They are the only
// way to send a statement: each also goes past the statement hook and carries a pending
// tenant scope (TenantScopeInFirstRoundTrip), which a statement sent on the sqlx
// transaction itself would skip. Commit and rollback belong to Write and Read.
type Tx struct {
	tx *sqlx.Tx
	// wc, when set, is the SQLite connection the transaction runs on (tx is nil then): the
	// writer's, on which the committer's group runs, or a reader's (readerpool.go).
	wc      *ownConn
	Dialect Dialect
	clock   Clock
	now     time.Time
	plans   *scanPlans
	// grouped: the transaction is shared by a group of writes (SQLite), so a caller's
	// cancellation must not interrupt a statement: SQLite would roll back the whole group.
	grouped bool
	// hook sees each statement before it runs (tests); inHook keeps the hook's own
	// statements from reaching it again.
	hook   StatementHook
	inHook bool
	// scope, when set, is a scope still to be sent in front of the next statement
	// (TenantScopeInFirstRoundTrip).
	scope func(nargs int) (string, []any)
	// after collects what AfterCommit was given (nil in a read).
	after *[]func()
	// refusal is the first refusal a trigger raised in the transaction (SQLite): the write
	// fails with it even if its function went on (refused).
	refusal error
}

// AfterCommit has f called once the write transaction tx belongs to has committed, on the
// goroutine that called Write, before Write returns; never when it rolls back (a retried
// try's functions are dropped with it). f tells the process of what the transaction did
// (waking waiters), so it must be cheap and must not block. In a read it is a no-op.
func (tx *Tx) AfterCommit(f func()) {
	if tx.after != nil {
		*tx.after = append(*tx.after, f)
	}
}

// Rebind turns a statement's ? placeholders into the dialect's (@p1… on SQL Server).
func (tx *Tx) Rebind(query string) string {
	if tx.wc != nil {
		return query // SQLite takes ? as written
	}
	return tx.tx.Rebind(query)
}

// withScope puts the pending scope, if any, in front of the statement about to be sent.
func (tx *Tx) withScope(query string, args []any) (string, []any) {
	if tx.scope == nil {
		return query, args
	}
	prefix, more := tx.scope(len(args))
	tx.scope = nil
	return prefix + "\n" + query, append(append(make([]any, 0, len(args)+len(more)), args...), more...)
}

// Now returns the transaction's time: the injected clock, or the database clock read once
// per transaction, truncated to milliseconds in UTC.
func (tx *Tx) Now(ctx context.Context) (time.Time, error) {
	if !tx.now.IsZero() {
		return tx.now, nil
	}
	if tx.clock != nil {
		tx.now = Truncate(tx.clock())
		return tx.now, nil
	}
	query := tx.Dialect.NowQuery()
	if query == "" {
		tx.now = Truncate(time.Now())
		return tx.now, nil
	}
	var t Time
	if err := tx.GetContext(ctx, &t, query); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	tx.now = Truncate(t.Time)
	return tx.now, nil
}

// SeedNow gives the transaction the database clock as one of its statements read it (a
// claim reads it in its first round trip), so Now sends no statement of its own. An
// injected clock, or a time this transaction already read, wins.
func (tx *Tx) SeedNow(t time.Time) {
	if tx.now.IsZero() && tx.clock == nil {
		tx.now = Truncate(t)
	}
}

// Truncate returns t in UTC truncated to milliseconds, the precision both dialects store.
func Truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// Scope says whose rows a transaction may touch.
type Scope struct {
	tenant      string
	maintenance bool
	// firstStatement: the scope travels with the transaction's first statement.
	firstStatement bool
}

// TenantScope limits a transaction to one tenant's rows (row-level security on SQL Server).
func TenantScope(tenantID string) Scope { return Scope{tenant: tenantID} }

// TenantScopeInFirstRoundTrip is TenantScope sent in the same round trip as the
// transaction's first statement instead of one of its own (SQL Server: the session-context
// statement is put in front of that statement's batch, its parameters after the
// statement's). The claim uses it so that its first round trip carries the scope, the
// tenant lock, the leased count and the clock. Where the dialect cannot do that, it is
// TenantScope.
func TenantScopeInFirstRoundTrip(tenantID string) Scope {
	return Scope{tenant: tenantID, firstStatement: true}
}

// scopePrefixer is a dialect that can send a scope with a transaction's first statement:
// scopePrefix returns the statement to put in front of it and that statement's arguments,
// numbered after the first statement's nargs own.
type scopePrefixer interface {
	scopePrefix(s Scope, nargs int) (string, []any)
}

// MaintenanceScope lets a transaction touch every tenant's rows: only the service's own
// maintenance code (key lookup, reaper, purge, the CLI) uses it, never a request's input.
func MaintenanceScope() Scope { return Scope{maintenance: true} }

const maxAttempts = 8

type writeWaitKey struct{}

// OnWriteWait returns ctx carrying f, which Write calls on SQLite as one of ctx's
// transactions goes to wait for the single writer. The tenancy layer gives a request's
// place among the requests being worked on up there: from then on the group commit's turns
// between tenants decide when it runs, and holding the place would only keep other
// requests from joining the same commit. SQL Server's pool has no turns between tenants,
// so there a request keeps its place. f must be cheap, must not block, and may be called
// more than once.
func OnWriteWait(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, writeWaitKey{}, f)
}

// Write runs fn in a read-write transaction in scope and commits it. A deadlock or busy
// database rolls back and runs fn again, and so does SQLite's group commit when another
// write of fn's group fails after changing rows (groupcommit.go), so fn must have no effects
// outside tx (AfterCommit's functions run once, after the commit that counted).
func (db *DB) Write(ctx context.Context, s Scope, fn func(*Tx) error) error {
	defer db.observeWrite(time.Now())
	var after []func()
	err := db.write(ctx, s, func(tx *Tx) error {
		after = after[:0] // a try run again starts over
		tx.after = &after
		return fn(tx)
	})
	if err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

func (db *DB) write(ctx context.Context, s Scope, fn func(*Tx) error) error {
	if db.group != nil {
		// The group commit takes the waiting tenants' writes in turn; on SQL Server the pool
		// hands connections out regardless of tenant, so the request keeps its place there.
		if f, ok := ctx.Value(writeWaitKey{}).(func()); ok {
			f()
		}
		// SQLite has no row-level security to scope, and one writer: group the commit.
		return db.retry(ctx, func() error { return db.group.submit(ctx, s.tenant, fn) })
	}
	return db.run(ctx, db.w, s, fn)
}

// Read runs fn in a read-only transaction in scope.
func (db *DB) Read(ctx context.Context, s Scope, fn func(*Tx) error) error {
	if db.readers != nil {
		return db.retry(ctx, func() error { return db.readOwn(ctx, fn) })
	}
	return db.run(ctx, db.r, s, fn)
}

func (db *DB) run(ctx context.Context, pool *sqlx.DB, s Scope, fn func(*Tx) error) error {
	return db.retry(ctx, func() error { return db.once(ctx, pool, s, fn) })
}

// retry runs a whole transaction again while it fails as retryable, with backoff.
func (db *DB) retry(ctx context.Context, once func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = once()
		if !errors.Is(err, ErrRetryable) || attempt == maxAttempts || ctx.Err() != nil {
			break
		}
		// Jittered exponential backoff keeps two losers of a deadlock from colliding again.
		d := time.Duration(1<<min(attempt, 6)) * time.Millisecond
		d += time.Duration(rand.Int64N(int64(d)))
		db.log.DebugContext(ctx, "retrying transaction", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	if errors.Is(err, ErrRetryable) {
		// Still busy after every retry: the caller gets 503 and may come back.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func (db *DB) once(ctx context.Context, pool *sqlx.DB, s Scope, fn func(*Tx) error) (err error) {
	// SQL Server: explicit READ COMMITTED, since a pooled connection can keep an old level.
	// SQLite: the reader pool opens deferred transactions, the writer pool immediate ones.
	sqlTx, err := pool.BeginTxx(ctx, &sql.TxOptions{Isolation: db.Dialect.Isolation()})
	if err != nil {
		return fmt.Errorf("begin transaction: %w", db.Dialect.MapError(err))
	}
	tx := &Tx{tx: sqlTx, Dialect: db.Dialect, clock: db.clock, plans: &db.plans, hook: db.statementHook()}
	defer func() {
		if p := recover(); p != nil {
			_ = sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = sqlTx.Rollback()
		}
	}()
	// The scope is part of beginning the transaction, as BEGIN is: the statement hook does
	// not see it.
	if p, ok := db.Dialect.(scopePrefixer); ok && s.firstStatement {
		tx.scope = func(nargs int) (string, []any) { return p.scopePrefix(s, nargs) }
	} else {
		tx.inHook = true
		err = db.Dialect.SetScope(ctx, tx, s)
		tx.inHook = false
	}
	if err != nil {
		return fmt.Errorf("set transaction scope: %w", db.Dialect.MapError(err))
	}
	if err = fn(tx); err != nil {
		// Tx's statements return mapped errors; this maps what fn got from elsewhere, so a
		// deadlock is still retried.
		return db.Dialect.MapError(err)
	}
	if err = sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", db.Dialect.MapError(err))
	}
	return nil
}

// Time scans a time sent as a time value (SQL Server, and SQLite columns answered with
// their DATETIME declared type) or as TimeLayout text (SQLite expressions, such as CAST(col
// AS TEXT) or strftime, which carry no declared type for the driver to convert by; a
// compound's column takes one branch's). The time is in UTC. The scan plans take a Time or
// NullTime field with the scanners of timetext.go, which parse alike and count.
type Time struct{ time.Time }

// Scan implements sql.Scanner; NULL is an error (use NullTime for nullable columns).
func (t *Time) Scan(src any) error {
	var n NullTime
	if err := n.Scan(src); err != nil {
		return err
	}
	if !n.Valid {
		return errors.New("unexpected NULL time")
	}
	t.Time = n.Time
	return nil
}

// NullTime is Time for a nullable column.
type NullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *NullTime) Scan(src any) error {
	v, ok, err := timeFrom(src, nil)
	if err != nil {
		return err
	}
	*t = NullTime{Time: v, Valid: ok}
	return nil
}
