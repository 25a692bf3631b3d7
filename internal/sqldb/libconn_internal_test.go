package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestWriterConnHandsValuesAsTheDriver: the writer's own connection (libconn.go) hands the
// scan what modernc's driver hands database/sql for the same statement: integers, reals,
// text, blobs (a zero-length one empty, not nil), NULL, and the text of DATE, DATETIME and
// TIMESTAMP columns parsed to a time.Time by the driver's layouts (or left as text when none
// parses); the column names are the driver's.
func TestWriterConnHandsValuesAsTheDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "values.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE v (a DATETIME, b date, c TIMESTAMP, d TEXT, e BLOB, f INTEGER, g REAL, h)`); err != nil {
		t.Fatal(err)
	}
	texts := []string{"2026-12-04T20:31:07.123Z", "2026-12-04 20:31:07.123456789+02:00", "2026-12-04 20:31",
		"2026-12-04", "2026-12-04 20:31:07.5 +0000 UTC m=+0.000000001", "2026-12-04 20:31:07 +0100 CET", "not a time", ""}
	for _, s := range texts {
		if _, err := db.ExecContext(ctx, `INSERT INTO v VALUES (?1, ?1, ?1, ?1, ?2, ?3, ?4, ?1)`, s, []byte(s), len(s), float64(len(s))/3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO v VALUES (1700000000, NULL, 2.5, NULL, x'', -1, NULL, x'00ff')`); err != nil {
		t.Fatal(err)
	}
	const query = `SELECT a, b, c, d, e, f, g, h, a AS alias, CAST(a AS TEXT) FROM v ORDER BY rowid`
	read := func(rows driver.Rows) (cols []string, all [][]driver.Value) {
		t.Helper()
		cols = rows.Columns()
		for {
			vals := make([]driver.Value, len(cols))
			if err := rows.Next(vals); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				return cols, all
			}
			all = append(all, vals)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wantCols []string
	var want [][]driver.Value
	if err := driverRowsOf(ctx, conn, query, func(rows driver.Rows) error {
		wantCols, want = read(rows)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lc, err := openLibConn(path, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.close()
	s, err := lc.prepare(query, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.finalize()
	for range 2 { // the second run reuses the statement
		rows, err := s.query(ctx, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		cols, got := read(rows)
		rows.Close()
		if !reflect.DeepEqual(cols, wantCols) {
			t.Fatalf("columns %q, the driver's %q", cols, wantCols)
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows, the driver's %d", len(got), len(want))
		}
		for i := range want {
			for j := range want[i] {
				w, g := want[i][j], got[i][j]
				if wt, ok := w.(time.Time); ok {
					if gt, ok := g.(time.Time); !ok || !gt.Equal(wt) || gt.Location().String() != wt.Location().String() {
						t.Errorf("row %d column %s: %#v, the driver's %#v", i, cols[j], g, w)
					}
					continue
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("row %d column %s: %#v, the driver's %#v", i, cols[j], g, w)
				}
			}
		}
	}
}

// TestWriterConnErrorsAsTheDriver: a statement that fails on the writer's own connection
// fails with the *sqlite.Error the driver gives for it (code and text), so MapError reads it
// as before: a unique violation is a ConflictError naming the columns, a foreign key a bad
// reference, a CHECK a refusal, a syntax error unmapped.
func TestWriterConnErrorsAsTheDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	if _, err := db.Raw().ExecContext(ctx, `CREATE TABLE p (id INTEGER PRIMARY KEY);
		CREATE TABLE u (k TEXT UNIQUE, p INTEGER REFERENCES p(id), n INTEGER CHECK (n > 0));
		INSERT INTO p VALUES (1); INSERT INTO u VALUES ('a', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO u VALUES ('a', 1, 1)`,
		`INSERT INTO u VALUES ('b', 2, 1)`,
		`INSERT INTO u VALUES ('c', 1, 0)`,
		`INSERT INTO nowhere VALUES (1)`,
	} {
		_, want := db.Raw().ExecContext(ctx, stmt)
		got := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, stmt)
			return err
		})
		var ws, gs *sqlite.Error
		if !errors.As(want, &ws) || !errors.As(got, &gs) {
			t.Fatalf("%s: the driver's %v, the writer's %v; want both *sqlite.Error", stmt, want, got)
		}
		if ws.Code() != gs.Code() || ws.Error() != gs.Error() {
			t.Errorf("%s: the writer's %d %q, the driver's %d %q", stmt, gs.Code(), gs.Error(), ws.Code(), ws.Error())
		}
		mw, mg := db.Dialect.MapError(want), db.Dialect.MapError(got)
		if reflect.TypeOf(mw) != reflect.TypeOf(mg) || errors.Is(mg, ErrRefused) != errors.Is(mw, ErrRefused) ||
			errors.Is(mg, ErrBadReference) != errors.Is(mw, ErrBadReference) {
			t.Errorf("%s: mapped to %v, the driver's to %v", stmt, mg, mw)
		}
		var cw, cg *ConflictError
		if errors.As(mw, &cw) != errors.As(mg, &cg) || (cw != nil && cw.Constraint != cg.Constraint) {
			t.Errorf("%s: conflict %+v, the driver's %+v", stmt, cg, cw)
		}
	}
}

// TestWriterConnInterruptsOnContext: a statement whose context ends while it runs is
// interrupted (sqlite3_interrupt) and fails with the context's error, and the connection
// runs the next statement; a context ended before the statement runs it not at all.
func TestWriterConnInterruptsOnContext(t *testing.T) {
	t.Parallel()
	lc, err := openLibConn(filepath.Join(t.TempDir(), "i.db"), []string{"journal_mode=WAL"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.close()
	long, err := lc.prepare(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n`, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer long.finalize()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := long.exec(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an endless statement whose context ended: %v, want the context's error", err)
	}
	if _, err := long.exec(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a statement run on an ended context: %v, want the context's error", err)
	}
	one, err := lc.prepare(`SELECT 1`, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer one.finalize()
	if _, err := one.exec(context.Background(), nil); err != nil {
		t.Fatalf("the next statement: %v", err)
	}
}

// TestWriterConnFreesItsMemory: opening and closing the writer's own connection with
// statements prepared, run and finalized leaves libc's allocator (SQLite's memory and the
// connection's own buffers) as it was: no C memory outlives its connection. The allocator
// counts only when built with the memory.counters tag:
//
//	go test -tags memory.counters ./internal/sqldb/ -run TestWriterConnFreesItsMemory
//
// Not parallel, so no other test's connection allocates meanwhile.
func TestWriterConnFreesItsMemory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	cycle := func() {
		lc, err := openLibConn(path, []string{"journal_mode=WAL", "cache_size(-32768)"}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer lc.close()
		for _, q := range []string{`CREATE TABLE IF NOT EXISTS t (x TEXT, y BLOB)`, `INSERT INTO t VALUES (?1, ?2)`, `SELECT x, y FROM t LIMIT 3`} {
			s, err := lc.prepare(q, sqlite3.SQLITE_PREPARE_PERSISTENT)
			if err != nil {
				t.Fatal(err)
			}
			args := []driver.NamedValue{{Ordinal: 1, Value: string(make([]byte, 5000))}, {Ordinal: 2, Value: make([]byte, 9000)}}
			if _, err := s.exec(ctx, args[:s.paramCount()]); err != nil {
				t.Fatal(err)
			}
			s.finalize()
		}
	}
	cycle() // SQLite's one-time allocations (its global state) happen here
	before := libc.MemStat()
	if before.Allocs == 0 {
		t.Skip("libc's allocator does not count: run with -tags memory.counters")
	}
	for range 50 {
		cycle()
	}
	if after := libc.MemStat(); after.Allocs > before.Allocs || after.Bytes > before.Bytes {
		t.Fatalf("libc holds %d allocations (%d bytes) after 50 connections, %d (%d bytes) before",
			after.Allocs, after.Bytes, before.Allocs, before.Bytes)
	}
}

// TestWriterScansColumnsAsAssign: the writer's rows read a column straight into the
// destinations the stores scan most (libRows.scanCol); every pairing of a value with a
// destination gives what assign gives for the driver's value, the same value or an error
// alike, in a plain column and in a DATETIME one.
func TestWriterScansColumnsAsAssign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lc, err := openLibConn(filepath.Join(t.TempDir(), "cols.db"), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.close()
	if err := lc.execOnce(`CREATE TABLE c (plain, at DATETIME)`); err != nil {
		t.Fatal(err)
	}
	sources := []string{"42", "-7", "300", "0", "1.5", "'text'", "'17'", "''", "x'00ff'", "x''", "NULL",
		"9223372036854775807", "'2026-12-04T20:31:07.123Z'", "'2026-12-04 20:31'",
		"'0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'", "'0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B'",
		"'{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}'", "'urn:uuid:0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'",
		"'0190a1b2c3d47e5f8a9b0c1d2e3f4a5b'", "'0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5'", "x'0190a1b2c3d47e5f8a9b0c1d2e3f4a5b'"}
	dests := []func() any{
		func() any { return new(string) }, func() any { return new(int) }, func() any { return new(int64) },
		func() any { return new(bool) }, func() any { return new(float64) }, func() any { return new([]byte) },
		func() any { return new(any) }, func() any { return new(*string) }, func() any { return new(*int) },
		func() any { return new(*int64) }, func() any { return new(enumInt) }, func() any { return new(sql.NullString) },
		func() any { return new(time.Time) }, func() any { return new(uuid.UUID) },
		func() any { return new(uuid.NullUUID) },
	}
	ins, err := lc.prepare(`INSERT INTO c VALUES (?1, ?1)`, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ins.finalize()
	sel, err := lc.prepare(`SELECT plain, at FROM c`, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sel.finalize()
	for _, src := range sources {
		if err := lc.execOnce(`DELETE FROM c`); err != nil {
			t.Fatal(err)
		}
		if err := lc.execOnce(`INSERT INTO c VALUES (` + src + `, ` + src + `)`); err != nil {
			t.Fatal(err)
		}
		rows, err := sel.query(ctx, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := rows.advance(); err != nil {
			t.Fatal(err)
		}
		for col := range 2 {
			for _, newDest := range dests {
				want, got := newDest(), newDest()
				wantErr := assign(want, rows.value(col))
				gotErr := rows.scanCol(col, got)
				name := fmt.Sprintf("%s in %s into %T", src, rows.Columns()[col], want)
				if (wantErr == nil) != (gotErr == nil) {
					t.Errorf("%s: assign's error %v, scanCol's %v", name, wantErr, gotErr)
					continue
				}
				if wantErr == nil && !reflect.DeepEqual(want, got) {
					t.Errorf("%s: assign stores %#v, scanCol %#v", name, reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem())
				}
			}
		}
		rows.Close()
	}
}
