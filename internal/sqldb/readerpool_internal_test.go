package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// readCount is one Read of t's row count.
func readCount(ctx context.Context, db *DB) (int, error) {
	var n int
	err := db.Read(ctx, MaintenanceScope(), func(tx *Tx) error {
		return tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM t")
	})
	return n, err
}

// idleReader is one of db's idle readers, left idle; the test fails when none is.
func idleReader(t *testing.T, db *DB) *ownConn {
	t.Helper()
	select {
	case c := <-db.readers.idle:
		db.readers.idle <- c
		return c
	default:
		t.Fatal("no reader is idle")
		return nil
	}
}

// TestReadsRunOnTheReadersOwnConnections: a Read runs on one of the readers' own
// connections with BEGIN, COMMIT and its statement prepared once there and kept, sees every
// committed write, and gives the connection back for the next Read.
func TestReadsRunOnTheReadersOwnConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	for i := range 3 {
		if err := insertRow(db, i); err != nil {
			t.Fatal(err)
		}
		if n, err := readCount(ctx, db); err != nil || n != i+1 {
			t.Fatalf("%d rows (%v), want %d", n, err, i+1)
		}
	}
	// Serial reads take the one idle connection every time.
	if len(db.readers.idle) != 1 {
		t.Fatalf("%d idle readers after serial reads, want 1", len(db.readers.idle))
	}
	c := idleReader(t, db)
	begin, query := c.stmts[beginReadSQL], c.stmts["SELECT COUNT(*) FROM t"]
	if begin == nil || query == nil || c.stmts[commitSQL] == nil {
		t.Fatal("BEGIN, COMMIT and the statement are not kept on the reader")
	}
	if _, err := readCount(ctx, db); err != nil {
		t.Fatal(err)
	}
	c = idleReader(t, db)
	if c.stmts[beginReadSQL] != begin || c.stmts["SELECT COUNT(*) FROM t"] != query || c.inTx {
		t.Fatal("the next read prepared its statements again, or left its transaction open")
	}
	// A reader writes nothing (query_only, as the reader pool's DSN).
	err := db.Read(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (x) VALUES (9)")
		return err
	})
	if err == nil {
		t.Fatal("a read wrote")
	}
	if n, err := readCount(ctx, db); err != nil || n != 3 {
		t.Fatalf("%d rows (%v) after a refused write in a read, want 3", n, err)
	}
}

// TestReadersAreBounded: at most maxReaders Reads run at once; the next waits for a
// connection to be given back, or for its context to end.
func TestReadersAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	release := make(chan struct{})
	var inside, wg sync.WaitGroup
	inside.Add(maxReaders)
	for range maxReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Read(ctx, MaintenanceScope(), func(tx *Tx) error {
				inside.Done()
				<-release
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	inside.Wait()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := readCount(short, db); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past the bound: %v, want to wait until its context ended", err)
	}
	got := make(chan error, 1)
	go func() { _, err := readCount(ctx, db); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("a read past the bound ran while every reader was owned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("the waiting read once a reader was given back: %v", err)
	}
	wg.Wait()
	if n := len(db.readers.slots); n != maxReaders {
		t.Fatalf("%d readers open, want %d", n, maxReaders)
	}
}

// TestReaderInterruptedByItsContext: a read whose context ends while its statement runs
// answers the context's error, and the reader it ran on serves the next Read (no interrupt
// is left to land on another read's statement).
func TestReaderInterruptedByItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := db.Read(short, MaintenanceScope(), func(tx *Tx) error {
		var n int
		return tx.GetContext(short, &n, `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n`)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an endless read whose context ended: %v, want the context's error", err)
	}
	for range 50 {
		if _, err := readCount(ctx, db); err != nil {
			t.Fatalf("a read after an interrupted one: %v", err)
		}
	}
	if n := len(db.readers.slots); n != 1 {
		t.Fatalf("%d readers open, want the one, kept", n)
	}
}

// TestReaderReplacedWhenBad: a reader found unusable is closed, not given to the next Read,
// which opens another.
func TestReaderReplacedWhenBad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	if _, err := readCount(ctx, db); err != nil {
		t.Fatal(err)
	}
	old := idleReader(t, db)
	err := db.Read(ctx, MaintenanceScope(), func(tx *Tx) error {
		tx.wc.noteBad(driver.ErrBadConn)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if old.lc.db != 0 || old.lc.buf != 0 {
		t.Fatal("the bad reader was not closed, nor its memory freed")
	}
	if _, err := readCount(ctx, db); err != nil {
		t.Fatalf("the read after a bad reader: %v", err)
	}
	c := idleReader(t, db)
	if c == old || len(db.readers.slots) != 1 {
		t.Fatalf("the next read ran on the bad reader, or %d readers are open", len(db.readers.slots))
	}
}

// TestReadersClosedWithTheDatabase: Close closes the idle readers and a reader owned at the
// time when it is given back; a Read after Close fails and opens nothing.
func TestReadersClosedWithTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Raw().Exec("CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	owned := make(chan *ownConn)
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- db.Read(ctx, MaintenanceScope(), func(tx *Tx) error {
			owned <- tx.wc
			<-release
			return nil
		})
	}()
	held := <-owned
	// A second reader, idle once its read is done.
	if _, err := readCount(ctx, db); err != nil {
		t.Fatal(err)
	}
	idle := idleReader(t, db)
	if idle == held {
		t.Fatal("two reads at once ran on one reader")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if idle.lc.db != 0 {
		t.Fatal("an idle reader outlived Close")
	}
	close(release)
	<-done
	if held.lc.db != 0 {
		t.Fatal("a reader owned during Close was kept when given back")
	}
	if _, err := readCount(ctx, db); !errors.Is(err, ErrClosed) {
		t.Fatalf("a read after Close: %v, want ErrClosed", err)
	}
	if n := len(db.readers.slots); n != 0 {
		t.Fatalf("%d readers open after Close", n)
	}
}
