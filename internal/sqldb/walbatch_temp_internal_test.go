package sqldb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walBatchTempOpens is how many unnamed temporary files the VFS has served from memory.
func walBatchTempOpens() int64 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.tempOpens
}

// walBatchAll is every row of q on w, each row's columns joined by "|", rows by "\n".
func walBatchAll(t *testing.T, w *libConn, q string) string {
	t.Helper()
	s, err := w.prepare(q, 0)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer s.finalize()
	rows, err := s.query(context.Background(), nil, false)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for {
		err := rows.advance()
		if errors.Is(err, io.EOF) {
			return strings.Join(out, "\n")
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var cols []string
		for i := range len(rows.Columns()) {
			cols = append(cols, fmt.Sprint(rows.value(i)))
		}
		out = append(out, strings.Join(cols, "|"))
	}
}

// TestWalBatchTempFilesInMemory: with temp_store=FILE, what SQLite spills to a temporary
// file on the committer's connection goes to the VFS's memory, and reads back as written:
// a savepoint's sub-journal past its 64 KiB in memory, rolled back to; a statement's
// journal, rolled back when the statement fails on its last row; a temporary table and a
// sort larger than their caches. Each leaves the database as it would be without the
// spill (its rows, and PRAGMA integrity_check). Not parallel: the VFS counts the opens of
// every connection in the process.
func TestWalBatchTempFilesInMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temp.db")
	w := openWalBatchWriter(t, path, "temp_store=FILE", "cache_size=8")
	defer w.close()
	exec := walBatchExec(t, w)
	exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`)
	exec(`WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < 3000)
INSERT INTO t SELECT k, printf('%06d-', k) || hex(randomblob(100)) FROM n`)
	before := walBatchAll(t, w, `SELECT k, v FROM t ORDER BY k`)
	opens := walBatchTempOpens()

	// A job's savepoint: every page of t and its index changes (far past the sub-journal's
	// 64 KiB in memory), then the job is rolled back; a write before the savepoint stays.
	exec(`BEGIN IMMEDIATE`)
	exec(`UPDATE t SET v = 'kept ' || v WHERE k = 1`)
	exec(`SAVEPOINT job`)
	exec(`UPDATE t SET v = lower(v) || ' gone'`)
	exec(`DELETE FROM t WHERE k % 3 = 0`)
	exec(`ROLLBACK TO job`)
	exec(`RELEASE job`)
	exec(`COMMIT`)
	want := strings.Replace(before, "1|000001-", "1|kept 000001-", 1)
	if got := walBatchAll(t, w, `SELECT k, v FROM t ORDER BY k`); got != want {
		t.Fatalf("after the savepoint was rolled back, t differs from before it (%d bytes against %d)", len(got), len(want))
	}
	if walBatchTempOpens() == opens {
		t.Fatal("the savepoint's sub-journal never spilled to a temporary file: the test exercises nothing")
	}

	// A statement that changes every row and fails on its last (the UNIQUE index) is
	// rolled back alone from its statement journal; the transaction goes on.
	opens = walBatchTempOpens()
	exec(`BEGIN IMMEDIATE`)
	err := w.execOnce(`UPDATE t SET v = CASE WHEN k = 3000 THEN (SELECT v FROM t WHERE k = 1) ELSE v || ' changed' END`)
	if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("the last row's update: got %v, want a UNIQUE constraint failure", err)
	}
	exec(`UPDATE t SET v = v || ' after' WHERE k = 2`)
	exec(`COMMIT`)
	lines := strings.Split(want, "\n")
	lines[1] += " after"
	want = strings.Join(lines, "\n")
	if got := walBatchAll(t, w, `SELECT k, v FROM t ORDER BY k`); got != want {
		t.Fatal("after the failed statement was rolled back, t differs from before it")
	}
	if walBatchTempOpens() == opens {
		t.Fatal("the statement's journal never spilled to a temporary file")
	}

	// A temporary table and a sort, each far larger than an 8-page cache.
	opens = walBatchTempOpens()
	exec(`PRAGMA temp.cache_size = 8`)
	exec(`CREATE TEMP TABLE x AS SELECT k, v FROM t`)
	if got, want := walBatchAll(t, w, `SELECT count(*), sum(length(v)) FROM temp.x`),
		walBatchAll(t, w, `SELECT count(*), sum(length(v)) FROM t`); got != want {
		t.Fatalf("the temporary table holds %s, t %s", got, want)
	}
	// Sorted here by the same key: the text after the row's number, descending (distinct,
	// the 100 random bytes).
	lines = strings.Split(walBatchAll(t, w, `SELECT v FROM t ORDER BY k`), "\n")
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(b[7:], a[7:]) })
	if got := walBatchAll(t, w, `SELECT v FROM t ORDER BY substr(v, 8) DESC`); got != strings.Join(lines, "\n") {
		t.Fatal("a sort larger than the cache answered its rows in another order")
	}
	if walBatchTempOpens() == opens {
		t.Fatal("neither the temporary table nor the sort spilled to a temporary file")
	}
	exec(`DROP TABLE temp.x`)
	if got := walBatchAll(t, w, `PRAGMA integrity_check`); got != "ok" {
		t.Fatalf("integrity_check: %s", got)
	}
}
