package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// TestCommitterOwnsTheWriterConnection is issue 35 item 2: every group runs on the one
// connection the committer holds, with BEGIN IMMEDIATE, COMMIT and the savepoint statements
// prepared once on it and kept from group to group (the same prepared statement, never a
// database/sql transaction's wrapper), while maintenance through the writer pool (Raw) still
// writes beside it.
func TestCommitterOwnsTheWriterConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	insert := func(x int) error { return insertRow(db, x) }
	if err := insert(1); err != nil {
		t.Fatal(err)
	}
	// Read on the committer's goroutine's state only between groups: Write has returned.
	wc := db.group.wc
	if wc == nil {
		t.Fatal("the committer holds no connection after a group")
	}
	begin, commit := wc.stmts[beginWriteSQL], wc.stmts[commitSQL]
	if begin == nil || commit == nil {
		t.Fatalf("BEGIN prepared: %v, COMMIT prepared: %v; want both", begin != nil, commit != nil)
	}
	// Groups of several jobs use the savepoints.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- insert(100 + i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if db.group.wc != wc || wc.stmts[beginWriteSQL] != begin || wc.stmts[commitSQL] != commit {
		t.Fatal("the writer's connection or its BEGIN and COMMIT were prepared again")
	}
	if wc.lc.db == 0 {
		t.Fatal("the committer's connection is closed")
	}
	// Maintenance through the writer pool does not wait for the committer's connection.
	if _, err := db.Raw().ExecContext(ctx, "INSERT INTO t (x) VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := insert(3); err != nil {
		t.Fatal(err)
	}
	wantRows(t, db, 67)
}

// TestWriterConnectionNeverKeepsATransaction: a job that ends the group's transaction
// itself (here a ROLLBACK; in production an I/O error does) makes the commit fail and that
// write fail, and the next group begins on the same connection as if nothing happened: the
// committer never carries an open transaction, or the lack of one, into the next group.
func TestWriterConnectionNeverKeepsATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (1)"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "ROLLBACK")
		return err
	})
	if err == nil {
		t.Fatal("a write whose transaction was ended under it reported success")
	}
	if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (2)")
		return err
	}); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	// The second write is committed: another connection sees it (and not the first).
	var xs []int
	if err := db.Raw().SelectContext(ctx, &xs, "SELECT x FROM t ORDER BY x"); err != nil || len(xs) != 1 || xs[0] != 2 {
		t.Fatalf("rows %v (%v), want [2]", xs, err)
	}
}

// TestNewFilesTakeThePageSize: a file ledger creates has pageSize pages and is in WAL mode
// (the page size is set before WAL fixes it); a file made earlier with SQLite's default
// keeps its page size, and ledger writes to it as before.
func TestNewFilesTakeThePageSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	pageAndMode := func(db *DB) (int, string) {
		t.Helper()
		var size int
		var mode string
		if err := db.Raw().GetContext(ctx, &size, "PRAGMA page_size"); err != nil {
			t.Fatal(err)
		}
		if err := db.Raw().GetContext(ctx, &mode, "PRAGMA journal_mode"); err != nil {
			t.Fatal(err)
		}
		return size, mode
	}

	fresh, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "ledger.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if size, mode := pageAndMode(fresh); size != pageSize || mode != "wal" {
		t.Fatalf("a new file: page size %d, journal mode %q; want %d, wal", size, mode, pageSize)
	}

	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=page_size(4096)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	db, err := Open(ctx, Config{DSN: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (1)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if size, mode := pageAndMode(db); size != 4096 || mode != "wal" {
		t.Fatalf("a file made with 4096-byte pages: page size %d, journal mode %q; want 4096, wal", size, mode)
	}
}

// TestWriterReplacesABadConnection: a connection the driver declared bad during a group
// (database/sql would have closed it under the statement) is not used for the next group:
// that group takes a new connection, and the bad one is closed with its C memory.
func TestWriterReplacesABadConnection(t *testing.T) {
	t.Parallel()
	for _, bad := range []error{driver.ErrBadConn, newSQLiteError("disk I/O error (778)", 778), newSQLiteError("file is not a database (26)", 26)} {
		t.Run(bad.Error(), func(t *testing.T) {
			t.Parallel()
			db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
			insert := func(x int) error { return insertRow(db, x) }
			if err := insert(1); err != nil {
				t.Fatal(err)
			}
			// Between groups (Write has returned), as a statement's error leaves it.
			old := db.group.wc
			old.noteBad(newSQLiteError("UNIQUE constraint failed: t.x (2067)", 2067))
			if old.bad {
				t.Fatal("a constraint's error marked the connection bad")
			}
			old.noteBad(bad)
			if !old.bad {
				t.Fatalf("%v did not mark the connection bad", bad)
			}
			if err := insert(2); err != nil {
				t.Fatalf("the group after a bad connection: %v", err)
			}
			if db.group.wc == old || db.group.wc.bad || db.group.wc.lc == old.lc {
				t.Fatal("the next group ran on the connection declared bad")
			}
			if old.lc.db != 0 || old.lc.buf != 0 {
				t.Fatal("the bad connection was not closed, nor its memory freed")
			}
			wantRows(t, db, 2)
		})
	}
}

// TestWriterRunsStatementsPastItsCache: once maxWriterStmts statements are kept, a new one
// is prepared for its one run and closed after it (its rows first), and the group works as
// before; the kept statements stay as they were.
func TestWriterRunsStatementsPastItsCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openQuiet(t)
	if _, err := db.Raw().ExecContext(ctx, "CREATE TABLE t (x INTEGER, at TEXT)"); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, MaintenanceScope(), func(*Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Between groups: fill the cache with one statement under many texts (closing it again
	// at the end is harmless).
	wc := db.group.wc
	filler, err := wc.prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	for i := len(wc.stmts); i < maxWriterStmts; i++ {
		wc.stmts[fmt.Sprintf("-- filler %d", i)] = filler
	}
	at := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	var got []struct {
		X  int       `db:"x"`
		At time.Time `db:"at"`
	}
	var n int
	if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		for x := range 3 {
			if _, err := tx.ExecContext(ctx, "INSERT INTO t (x, at) VALUES (?1, ?2)", x, tx.Dialect.Time(at)); err != nil {
				return err
			}
		}
		if err := tx.SelectContext(ctx, &got, "SELECT x, at FROM t ORDER BY x"); err != nil {
			return err
		}
		return tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM t WHERE x >= ?1", 1)
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].X != 2 || !got[2].At.Equal(at) || n != 2 {
		t.Fatalf("rows %+v and count %d, want x 0..2 at %v and 2", got, n, at)
	}
	if len(wc.stmts) != maxWriterStmts {
		t.Fatalf("%d statements kept, want the cache's %d", len(wc.stmts), maxWriterStmts)
	}
}

// TestSQLiteErrorLayout: the writer's errors are the driver's *sqlite.Error, made through
// a mirror of its unexported fields (libconn.go); the mirror must match the type field for
// field, or a driver upgrade would make them unreadable.
func TestSQLiteErrorLayout(t *testing.T) {
	t.Parallel()
	want := reflect.TypeOf(sqlite.Error{})
	got := reflect.TypeOf(sqliteErrorLayout{})
	if want.NumField() != got.NumField() || want.Size() != got.Size() {
		t.Fatalf("sqlite.Error has %d fields (%d bytes), the mirror %d (%d bytes)", want.NumField(), want.Size(), got.NumField(), got.Size())
	}
	for i := range want.NumField() {
		w, g := want.Field(i), got.Field(i)
		if w.Name != g.Name || w.Type != g.Type || w.Offset != g.Offset {
			t.Fatalf("field %d: sqlite.Error's %s %v at %d, the mirror's %s %v at %d", i, w.Name, w.Type, w.Offset, g.Name, g.Type, g.Offset)
		}
	}
	e := newSQLiteError("constraint failed: x", 2067)
	if e.Code() != 2067 || e.Error() != "constraint failed: x" {
		t.Fatalf("code %d text %q", e.Code(), e.Error())
	}
}
