package sqldb

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// TestWalBatchRollbackThenOtherWriter: a transaction of the batching connection spills
// pages to the log and is rolled back. The frames still in the buffer must not reach the
// file after the write lock is let go: by then another connection may have committed
// frames at the same offsets.
func TestWalBatchRollbackThenOtherWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	w := openWalBatchWriter(t, path, "synchronous=NORMAL", "cache_size=10")
	defer w.close()
	exec := walBatchExec(t, w)
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
	// Everything in the database file, so that the rollback reads no page back from the
	// log (a read would write the buffer out while the write lock is still held).
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	exec("BEGIN IMMEDIATE")
	exec("INSERT INTO t (v) VALUES (randomblob(300000))") // spills: a cache of ten pages
	if walBatchOf(t, path).n == 0 {
		t.Fatal("the spill left nothing in the buffer: the case is not exercised")
	}
	exec("ROLLBACK")

	// Another writer on unix's own VFS (the writer pool: migrations, Raw; or another
	// process) commits frames over the same part of the log.
	o, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Exec("INSERT INTO t (id, v) VALUES (7, zeroblob(600000))"); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		// A new connection each time: a reader keeps its page cache while the wal-index
		// header is unchanged.
		r, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var same int
		if err := r.QueryRow("SELECT v = zeroblob(600000) FROM t WHERE id = 7").Scan(&same); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if same != 1 {
			t.Fatalf("%s: the committed row reads back wrong", what)
		}
		var ok string
		if err := r.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("%s: integrity_check: %q, %v", what, ok, err)
		}
	}
	check("before the batching connection runs again")
	// Its next statement begins a read, whose xShmBarrier writes out what was left.
	exec("SELECT count(*) FROM t")
	check("after the batching connection ran again")
	if late := walBatchOf(t, path).late; late != 0 {
		t.Errorf("%d barriers found log bytes not yet written", late)
	}
}

// TestWalBatchNoPowersafeOverwrite: with synchronous=FULL on a file without powersafe
// overwrite (psow=0), SQLite pads a commit to the sector boundary with copies of the
// commit frame and splits the frame that crosses it around a sync (walWriteToLog). Those
// frames are published with the commit, so they must be written before its header, by
// xWrite (whose error fails the commit), not left to the barrier (whose error is lost).
func TestWalBatchNoPowersafeOverwrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p.db")
	w := openWalBatchWriter(t, path+"?psow=0", "synchronous=FULL")
	defer w.close()
	exec := walBatchExec(t, w)
	for _, q := range []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)",
		"INSERT INTO t (v) VALUES (randomblob(3000))", "INSERT INTO t (v) VALUES (randomblob(10))"} {
		exec(q)
	}
	if late := walBatchOf(t, path).late; late != 0 {
		t.Errorf("%d barriers found log bytes not yet written", late)
	}
}
