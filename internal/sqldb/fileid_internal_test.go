package sqldb

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/syncbuf"
)

func openLogged(t *testing.T, path string) (*DB, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	db, err := Open(context.Background(), Config{DSN: path, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Raw().Exec("CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	return db, logs
}

// openQuiet opens a new database file whose log goes nowhere, closed when t ends.
func openQuiet(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{DSN: filepath.Join(t.TempDir(), "ledger.db"), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wantRows fails t unless t holds want rows, read through the writer pool.
func wantRows(t *testing.T, db *DB, want int) {
	t.Helper()
	var n int
	if err := db.Raw().GetContext(context.Background(), &n, "SELECT COUNT(*) FROM t"); err != nil || n != want {
		t.Fatalf("%d rows (%v), want %d", n, err, want)
	}
}

func insertRow(db *DB, x int) error {
	ctx := context.Background()
	return db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (?)", x)
		return err
	})
}

// TestDatabaseFileReplacedWhileServing is issue 17 item 13: the database file deleted, or
// another file renamed over it, while the process serves. Writes went on into the unlinked
// file and readiness stayed 200; the acknowledged rows were gone at the next start. Now the
// writer and readiness compare the path's device and inode with the file opened: both fail
// as unavailable (503) and the cause is logged as an error.
func TestDatabaseFileReplacedWhileServing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		replace func(t *testing.T, path string)
	}{
		{"Unlinked", func(t *testing.T, path string) {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}},
		{"RenamedOver", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.db")
			odb, err := Open(context.Background(), Config{DSN: other})
			if err != nil {
				t.Fatal(err)
			}
			odb.Close()
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ledger.db")
			db, logs := openLogged(t, path)
			ctx := context.Background()
			if err := insertRow(db, 1); err != nil {
				t.Fatal(err)
			}
			if err := db.Probe(ctx); err != nil {
				t.Fatalf("ready before: %v", err)
			}
			c.replace(t, path)
			if err := db.Probe(ctx); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errFileReplaced) {
				t.Fatalf("readiness with the file %s: %v, want unavailable", c.name, err)
			}
			for i := range 3 {
				if err := insertRow(db, 10+i); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("write %d with the file %s: %v, want unavailable", i, c.name, err)
				}
			}
			var n int
			if err := db.Raw().Get(&n, "SELECT COUNT(*) FROM t"); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("%d rows in the open file, want 1: refused writes were written", n)
			}
			if got := strings.Count(logs.String(), `"level":"ERROR"`); got != 1 {
				t.Fatalf("%d error lines, want the one that names the cause:\n%s", got, logs.String())
			}
		})
	}
}

// TestReadinessFailsWhileWritesFail: a write failing for the file's sake (a real
// SQLITE_FULL, the file capped by max_page_count as a full disk would cap it) makes
// readiness fail until writeFailHold passes without another.
func TestReadinessFailsWhileWritesFail(t *testing.T) {
	t.Parallel()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	ctx := context.Background()
	pragma := func(q string) {
		t.Helper()
		if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
			t.Fatal(err)
		}
	}
	pragma("PRAGMA max_page_count = 1") // capped at the pages the file has now
	err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (zeroblob(1000000))")
		return err
	})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("a write past the full file: %v, want unavailable (full)", err)
	}
	pragma("PRAGMA max_page_count = 1073741823")
	if err := db.Probe(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("readiness right after a failed write: %v, want unavailable", err)
	}
	db.file.failedAt.Store(time.Now().Add(-writeFailHold).UnixNano())
	if err := db.Probe(ctx); err != nil {
		t.Fatalf("readiness %s after the last failed write: %v", writeFailHold, err)
	}
	if err := insertRow(db, 2); err != nil {
		t.Fatal(err)
	}
	if err := db.Probe(ctx); err != nil {
		t.Fatalf("readiness after a good write: %v", err)
	}
}

// TestWALReplacedWhileServing is issue 30 item 4: the -wal file alone deleted, or another
// file renamed over it, while the process serves. SQLite went on appending commits to the
// unlinked log and readiness stayed 200; a crash then lost the acknowledged writes. Now
// the writer and readiness compare the log's device and inode as they do the database
// file's: both fail as unavailable (503), the cause logged once as an error, and nothing
// refused is written.
func TestWALReplacedWhileServing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		replace func(t *testing.T, wal string)
	}{
		{"Deleted", func(t *testing.T, wal string) {
			if err := os.Remove(wal); err != nil {
				t.Fatal(err)
			}
		}},
		{"RenamedOver", func(t *testing.T, wal string) {
			b, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			other := wal + ".copy"
			if err := os.WriteFile(other, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, wal); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ledger.db")
			db, logs := openLogged(t, path)
			ctx := context.Background()
			if err := insertRow(db, 1); err != nil {
				t.Fatal(err)
			}
			if err := db.Probe(ctx); err != nil {
				t.Fatalf("ready before: %v", err)
			}
			if _, err := os.Stat(path + "-wal"); err != nil {
				t.Fatalf("setup: no write-ahead log: %v", err)
			}
			c.replace(t, path+"-wal")
			if err := db.Probe(ctx); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errWALReplaced) {
				t.Fatalf("readiness with the log %s: %v, want unavailable", c.name, err)
			}
			for i := range 3 {
				if err := insertRow(db, 10+i); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("write %d with the log %s: %v, want unavailable", i, c.name, err)
				}
			}
			var n int
			if err := db.Raw().Get(&n, "SELECT COUNT(*) FROM t"); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("%d rows, want 1: refused writes were written", n)
			}
			if got := strings.Count(logs.String(), `"level":"ERROR"`); got != 1 || !strings.Contains(logs.String(), "write-ahead log") {
				t.Fatalf("%d error lines, want one naming the write-ahead log:\n%s", got, logs.String())
			}
		})
	}
}
