package sqldb

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// walBatchOf returns a copy of the buffer of the log of the database at path open through
// the batching VFS: its counters, and n, the bytes it still holds.
func walBatchOf(t *testing.T, path string) walBatch {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	v := walBatchRegistered.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, b := range v.wal {
		if b.db == real {
			return *b
		}
	}
	t.Fatalf("no log of %s is open through %s", real, walBatchVFSName)
	return walBatch{}
}

// walBatchExec runs statements on w, failing the test on an error.
func walBatchExec(t *testing.T, w *libConn) func(q string) {
	return func(q string) {
		t.Helper()
		if err := w.execOnce(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func openWalBatchWriter(t *testing.T, path string, pragmas ...string) *libConn {
	t.Helper()
	if _, err := walBatchOnce(); err != nil {
		t.Fatal(err)
	}
	w, err := openLibConn(path, append([]string{"page_size=2048", "journal_mode=WAL", "wal_autocheckpoint=0"}, pragmas...), walBatchVFSName)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWalBatch: through the batching VFS every commit is seen by a reader on SQLite's own
// VFS as soon as it returns: commits of one page, of a few, of more than the buffer holds,
// and one whose pages spilled to the log before it and were written there again (SQLite
// then rewrites the frames' checksums at commit), with synchronous NORMAL and FULL. The
// log's writes are gathered (far fewer system calls than SQLite's writes), and no barrier
// ever found bytes left behind: each commit went out with its last frame. The third case
// checkpoints every 20 pages and cuts the log back to 64 KiB, so the log starts over from
// its beginning (a new header at offset 0) and is truncated after a commit, many times.
func TestWalBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		pragmas []string
	}{
		{"NORMAL", []string{"synchronous=NORMAL"}},
		{"FULL", []string{"synchronous=FULL"}},
		{"restarts", []string{"synchronous=NORMAL", "wal_autocheckpoint=20", "journal_size_limit=65536"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "w.db")
			w := openWalBatchWriter(t, path, tc.pragmas...)
			defer w.close()
			exec := walBatchExec(t, w)
			exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
			r, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var rows, bytes int64
			seen := func(what string) {
				t.Helper()
				var n, b int64
				if err := r.QueryRow("SELECT count(*), coalesce(sum(length(v)), 0) FROM t").Scan(&n, &b); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if n != rows || b != bytes {
					t.Fatalf("%s: a reader sees %d rows of %d bytes; %d rows of %d bytes were committed", what, n, b, rows, bytes)
				}
			}
			// One page, a few, about twenty, and more than the buffer's 124 KiB.
			sizes := []int64{10, 3000, 40000, 300000}
			for i := range 80 {
				size := sizes[i%len(sizes)]
				exec(fmt.Sprintf("INSERT INTO t (v) VALUES (randomblob(%d))", size))
				rows, bytes = rows+1, bytes+size
				seen(fmt.Sprintf("commit %d (%d bytes)", i, size))
			}
			b := walBatchOf(t, path)
			writes, issued := b.writes, b.issued
			if issued*4 > writes {
				t.Errorf("SQLite's %d writes to the log took %d system calls: not gathered", writes, issued)
			}
			t.Logf("%d commits: %d writes to the log in %d system calls", len(sizes)*20, writes, issued)
			// A cache of ten pages: the transaction's pages spill to the log and are written
			// there again before it commits.
			exec("PRAGMA cache_size=10")
			exec("BEGIN")
			for range 3 {
				exec("UPDATE t SET v = randomblob(length(v))")
			}
			exec("DELETE FROM t WHERE id % 5 = 0")
			exec("COMMIT")
			if err := r.QueryRow("SELECT count(*), coalesce(sum(length(v)), 0) FROM t WHERE id % 5 <> 0").Scan(&rows, &bytes); err != nil {
				t.Fatal(err)
			}
			seen("after the spilling transaction")
			var ok string
			if err := r.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
				t.Fatalf("integrity_check: %q, %v", ok, err)
			}
			if late := walBatchOf(t, path).late; late != 0 {
				t.Errorf("%d barriers found log bytes not yet written", late)
			}
		})
	}
}

// TestWalBatchFailedWriteFailsTheCommit: when the log cannot be written (a file size limit,
// in a child process), the commit whose frames were gathered fails, no reader sees it, and
// after the process ends the database holds exactly the commits that returned.
func TestWalBatchFailedWriteFailsTheCommit(t *testing.T) {
	if dir := os.Getenv("LEDGER_WALBATCH_CHILD"); dir != "" {
		walBatchFailingChild(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWalBatchFailedWriteFailsTheCommit$", "-test.v")
	cmd.Env = append(os.Environ(), "LEDGER_WALBATCH_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, after, found := strings.Cut(string(out), "acknowledged ")
	if !found {
		t.Fatalf("child said nothing of its commits:\n%s", out)
	}
	acked, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(after)[0], ","))
	if err != nil || acked == 0 {
		t.Fatalf("child: %q acknowledged commits:\n%s", strings.Fields(after)[0], out)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != acked {
		t.Errorf("the database holds %d rows after the process ended; %d commits returned", n, acked)
	}
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

func walBatchFailingChild(t *testing.T, dir string) {
	path := filepath.Join(dir, "f.db")
	w := openWalBatchWriter(t, path)
	if err := w.execOnce("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)"); err != nil {
		t.Fatal(err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	// Past the limit a write fails with EFBIG instead of the signal ending the process.
	signal.Ignore(syscall.SIGXFSZ)
	limit := syscall.Rlimit{Cur: 2 << 20, Max: 2 << 20}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for i := range 1000 {
		err := w.execOnce("INSERT INTO t (v) VALUES (randomblob(30000))")
		var n int
		if qerr := r.QueryRow("SELECT count(*) FROM t").Scan(&n); qerr != nil {
			t.Fatal(qerr)
		}
		if err != nil {
			if n != acked {
				t.Fatalf("commit %d failed (%v), yet a reader sees %d rows, not %d", i, err, n, acked)
			}
			fmt.Printf("acknowledged %d, then: %v\n", acked, err)
			return
		}
		acked++
		if n != acked {
			t.Fatalf("commit %d returned, and a reader sees %d rows, not %d", i, n, acked)
		}
	}
	t.Fatal("the log never reached the file size limit")
}
