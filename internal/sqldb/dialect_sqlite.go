package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/ledger-dev/ledger/internal/ids"
	sqlitemigrations "github.com/ledger-dev/ledger/migrations/sqlite"
)

// SQLite's result codes that MapError reads (https://sqlite.org/rescode.html).
const (
	sqliteBusy       = 5
	sqliteLocked     = 6
	sqliteReadOnly   = 8
	sqliteIOErr      = 10
	sqliteFull       = 13
	sqliteCantOpen   = 14
	sqliteProtocol   = 15
	sqliteConstraint = 19

	sqliteConstraintForeignKey = 787
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
	// sqliteConstraintTrigger is a trigger's RAISE (SQLITE_CONSTRAINT_TRIGGER).
	sqliteConstraintTrigger = 1811
)

// DefaultBusyTimeout is how long a SQLite writer waits for another process's write lock
// before the transaction fails as busy and the request is answered 503.
const DefaultBusyTimeout = 5 * time.Second

type sqliteDialect struct{}

func openSQLite(ctx context.Context, path, sync string, busyTimeout time.Duration) (*DB, error) {
	if busyTimeout <= 0 {
		busyTimeout = DefaultBusyTimeout
	}
	if path == "" {
		return nil, errors.New("open sqlite: empty database path")
	}
	switch sync = strings.ToLower(sync); sync {
	case "", "normal":
		sync = "NORMAL"
	case "full":
		sync = "FULL"
	default:
		return nil, fmt.Errorf("open sqlite: LEDGER_SQLITE_SYNC must be normal or full, not %q", sync)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("open sqlite: create directory: %w", err)
		}
	}
	// Each pool's pragmas, and the own connections' (ownconn.go), in the order the driver
	// applies a DSN's: its _pragma list sorted by name, then _journal_mode.
	common := []string{
		"busy_timeout(" + fmt.Sprint(busyTimeout.Milliseconds()) + ")",
		"foreign_keys(1)",
		"synchronous(" + sync + ")",
		"temp_store(memory)",
	}
	// A larger page cache for the one writer keeps the hot index pages of a deep queue in
	// memory (the default is 2 MiB); readers share the OS page cache and keep the default.
	// page_size takes effect only on a file that has no pages yet: it is applied before
	// journal_mode, so a new file gets its page size before WAL fixes it. An existing file
	// keeps the page size it was made with (a VACUUM after leaving WAL mode would change
	// it); the pragma is then a no-op.
	writerPragmas := sortedPragmas(common, "cache_size(-32768)", "journal_size_limit("+fmt.Sprint(walSizeLimit)+")",
		"page_size("+fmt.Sprint(pageSize)+")", "wal_autocheckpoint("+fmt.Sprint(walRestartPages)+")")
	readerPragmas := sortedPragmas(common, "query_only(1)")
	// Immediate transactions take the write lock at BEGIN, so a writer waits on the busy
	// timeout instead of failing when it upgrades from a read.
	writerDSN := pragmaDSN(path, writerPragmas) + "&_journal_mode=WAL&_txlock=immediate"
	w, err := sqlx.Open("sqlite", writerDSN)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite has one writer at a time: queueing writers in the pool is fairer and cheaper
	// than letting them spin on the busy handler.
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if err := pingWriter(ctx, w, busyTimeout); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sqlx.Open("sqlite", pragmaDSN(path, readerPragmas)+"&_txlock=deferred")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// The pool serves maintenance and readiness alone (RawReader, Ping): Read runs on the
	// readers' own connections (readerpool.go), opened with the same pragmas.
	r.SetMaxOpenConns(2)
	ck, err := sqlx.Open("sqlite", pragmaDSN(path, common))
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	ck.SetMaxOpenConns(1)
	// The committer's own connection opens at its first group, when the file is in WAL
	// mode (pingWriter); the readers' own connections (readerpool.go) at a Read's need.
	// It runs temp_store=FILE where the pools run MEMORY: its temporary files are memory
	// all the same, the batching VFS's (walbatch_temp.go), and SQLite then keeps a
	// sub-journal in 64 KiB chunks instead of 1 KiB ones.
	writerPragmas = append(writerPragmas, "journal_mode=WAL")
	writerPragmas[slices.Index(writerPragmas, "temp_store(memory)")] = "temp_store(file)"
	return &DB{Dialect: sqliteDialect{}, w: w, writerPragmas: writerPragmas, readerPragmas: readerPragmas, r: r, ck: ck, sqlitePath: path, file: newSQLiteFile(path)}, nil
}

// sortedPragmas is common and more, sorted by name as the driver applies a DSN's _pragma list.
func sortedPragmas(common []string, more ...string) []string {
	out := slices.Concat(common, more)
	slices.Sort(out)
	return out
}

// pragmaDSN is the driver's DSN of path with pragmas.
func pragmaDSN(path string, pragmas []string) string {
	return "file:" + path + "?_pragma=" + strings.Join(pragmas, "&_pragma=")
}

// pageSize is a new file's page size. 2048 bytes rather than SQLite's 4096: a cycle
// rewrites a few rows and their index entries, and every page it dirties goes to the WAL
// whole at each commit, so smaller pages halve the bytes written per cycle (measured in
// docs/perf/issue-35.md, with what it costs reads).
const pageSize = 2048

// pingWriter opens the writer's connection, which switches a new file to WAL. That switch
// needs the file to itself and SQLite answers SQLITE_BUSY at once, without the busy
// handler, while another process is opening the same new file (two replicas starting
// together). So a busy open is tried again for up to the busy timeout.
func pingWriter(ctx context.Context, w *sqlx.DB, busyTimeout time.Duration) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := w.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || !busyOrLocked(se.Code()) ||
			time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// SQLiteName is SQLite's Dialect.Name, under which the stores register its statement sets.
const SQLiteName = "sqlite"

func (sqliteDialect) Name() string { return SQLiteName }

func (sqliteDialect) Embedded() bool { return true }

// EmulatesRowVersion: the RowVersionCounter table and its triggers stamp rows.
func (sqliteDialect) EmulatesRowVersion() bool { return true }

func (sqliteDialect) QualifyTable(name string) string { return name }

func (sqliteDialect) Migrations() fs.FS { return sqlitemigrations.FS }

func (sqliteDialect) Time(t time.Time) any { return FormatTimeText(t) }

func (d sqliteDialect) NullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return d.Time(*t)
}

func (sqliteDialect) Version(v RowVersion) any { return int64(v) }

// NowQuery is empty: an embedded database's clock is this machine's (every process sharing
// the file runs here), so asking SQLite for it would only cost a statement.
func (sqliteDialect) NowQuery() string { return "" }

func (sqliteDialect) Isolation() sql.IsolationLevel { return sql.LevelDefault }

// JSON is the text itself: SQLite has no declared parameter types.
func (sqliteDialect) JSON(s string) any { return s }

// Text: SQLite declares nothing.
func (sqliteDialect) Text(s string) any { return s }

func (sqliteDialect) NullText(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// NewID: SQLite compares ids from their first byte (ids.TimeFirst). With the time last, every
// insert landed on a random page of each uuid index, and a group commit wrote that many more
// pages (docs/perf/issue-12.md, "Time-first ids": append p99 18–21 ms against 23–29 ms).
func (sqliteDialect) NewID() uuid.UUID { return ids.TimeFirst() }

// SetScope does nothing on SQLite: it has no row-level security, and every query filters
// on TenantId (the conformance suite's cross-tenant cases check that).
func (sqliteDialect) SetScope(context.Context, *Tx, Scope) error { return nil }

func (sqliteDialect) MapError(err error) error {
	if err == nil || mapped(err) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	code := se.Code()
	switch {
	case code == sqliteConstraintUnique || code == sqliteConstraintPrimaryKey:
		// "UNIQUE constraint failed: Runs.TenantId, Runs.Subject" or "… index 'name'".
		_, cols, _ := strings.Cut(se.Error(), "constraint failed: ")
		return &ConflictError{Constraint: cols, cause: err}
	case code == sqliteConstraintForeignKey:
		return fmt.Errorf("%w: %w", ErrBadReference, err)
	case code&0xff == sqliteConstraint:
		return fmt.Errorf("%w: %w", ErrRefused, err)
	case code&0xff == sqliteIOErr || code&0xff == sqliteFull || code&0xff == sqliteCantOpen ||
		code&0xff == sqliteProtocol || code&0xff == sqliteReadOnly:
		// The file cannot be read or written (disk full, I/O error, permissions): the
		// service answers 503 and resumes by itself once the file is usable again;
		// readiness fails meanwhile (errStorage, fileid.go).
		return fmt.Errorf("%w: %w: %w", ErrUnavailable, errStorage, err)
	case busyOrLocked(code):
		// The busy timeout already waited for the other process's lock; waiting again
		// would only hold the caller longer. Answer 503 and let the client retry.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// busyOrLocked reports a SQLite result code (extended or not) saying another connection
// holds the lock a statement needed.
func busyOrLocked(code int) bool { return code&0xff == sqliteBusy || code&0xff == sqliteLocked }
