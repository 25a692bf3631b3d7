package sqldb

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// libConn is a SQLite connection opened on the transpiled SQLite itself
// (modernc.org/sqlite/lib), not through the driver: the driver fetched every result
// column's name and declared type and every parameter's name again for each statement it
// ran, copied them into Go strings and malloc'ed every text argument into C memory
// (docs/perf/issue-35.md, "The writer's own connection"). Here a statement reads its
// columns and maps its parameters once, at prepare, and binds text and blobs from one
// C buffer the connection keeps. It opens the same file with a pool's settings (the
// writer's writerPragmas, the readers' readerPragmas) in the same process, through the same
// lib and so the same unix VFS and inode lock table as the pools beside it.
//
// unsafe is used in this file for C memory alone: the connection's handles and buffers
// are libc allocations addressed as uintptr, read and written through unsafe.Slice
// over them; no Go memory is handed to SQLite.
type libConn struct {
	tls *libc.TLS
	db  uintptr
	// buf is a C buffer for a text or blob argument (SQLite copies it at bind:
	// SQLITE_TRANSIENT), and bufCap its size; pp is two pointer-sized C cells for the out
	// parameters of open and prepare. Both are SQLite's allocations (sqlite3_malloc64), so
	// sqlite3_memory_used counts them with the connection's own (TestWriterConnFreesItsMemory).
	buf    uintptr
	bufCap int
	pp     uintptr
}

// sqliteTransient is SQLITE_TRANSIENT, ((sqlite3_destructor_type)-1): SQLite copies the
// value before bind returns, so the connection's one buffer serves every argument.
const sqliteTransient = ^uintptr(0)

// openLibConn opens path with a pool's pragmas, in the order the driver applies them,
// through the VFS named vfs ("": SQLite's default, unix).
func openLibConn(path string, pragmas []string, vfs string) (*libConn, error) {
	c := &libConn{tls: libc.NewTLS()}
	c.pp = sqlite3.Xsqlite3_malloc64(c.tls, 16)
	if c.pp == 0 {
		c.tls.Close()
		return nil, errors.New("open sqlite: out of memory")
	}
	name, err := libc.CString("file:" + path)
	if err != nil {
		c.close()
		return nil, err
	}
	var zVfs uintptr
	if vfs != "" {
		if zVfs, err = libc.CString(vfs); err != nil {
			libc.Xfree(c.tls, name)
			c.close()
			return nil, err
		}
	}
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, c.pp,
		sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, zVfs)
	libc.Xfree(c.tls, name)
	libc.Xfree(c.tls, zVfs)
	c.db = *(*uintptr)(cmem(c.pp))
	if rc != sqlite3.SQLITE_OK {
		err := c.errstr(rc)
		c.close()
		return nil, err
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	for _, p := range pragmas {
		if err := c.execOnce("PRAGMA " + p); err != nil {
			c.close()
			return nil, fmt.Errorf("open sqlite: PRAGMA %s: %w", p, err)
		}
	}
	return c, nil
}

// execOnce prepares, steps to the end and finalizes one statement (the pragmas at open).
func (c *libConn) execOnce(query string) error {
	s, err := c.prepare(query, 0)
	if err != nil {
		return err
	}
	defer s.finalize()
	for {
		rc := sqlite3.Xsqlite3_step(c.tls, s.p)
		switch rc {
		case sqlite3.SQLITE_ROW:
			continue
		case sqlite3.SQLITE_DONE:
			return nil
		default:
			return c.errstr(rc)
		}
	}
}

// errstr is the driver's error for rc (errstrForDB without _error_rc, the DSN sets none),
// as a *sqlite.Error: the stores and MapError read that type's code and text.
func (c *libConn) errstr(rc int32) error {
	str := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	var s string
	if rc == sqlite3.SQLITE_BUSY {
		s = " (SQLITE_BUSY)"
	}
	if c.db != 0 {
		if msg := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)); msg != str {
			str += ": " + msg
		}
	}
	return newSQLiteError(fmt.Sprintf("%s (%v)%s", str, rc, s), int(rc))
}

// sqliteErrorLayout mirrors sqlite.Error's fields, which are unexported: the own
// connections' errors must be the driver's type so that every errors.As(*sqlite.Error) in and outside
// this package reads them as before. TestSQLiteErrorLayout checks the mirror against the
// type by reflection, so an upgrade of the driver that changes it fails a test.
type sqliteErrorLayout struct {
	msg  string
	code int
}

func newSQLiteError(msg string, code int) *sqlite.Error {
	return (*sqlite.Error)(unsafe.Pointer(&sqliteErrorLayout{msg: msg, code: code}))
}

// cmem is C memory at p (a libc allocation, never moved nor collected by Go) as an
// unsafe.Pointer, read through p's own address: the direct conversion of a uintptr is
// what vet's check is there for when p could be Go memory, which it never is here.
func cmem(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// grow makes buf hold at least n bytes.
func (c *libConn) grow(n int) error {
	if n <= c.bufCap && c.buf != 0 {
		return nil
	}
	size := max(n, 2*c.bufCap, 256)
	p := sqlite3.Xsqlite3_realloc64(c.tls, c.buf, uint64(size))
	if p == 0 {
		return errors.New("sqlite: out of memory for an argument")
	}
	c.buf, c.bufCap = p, size
	return nil
}

// totalChanges is sqlite3_total_changes64: the rows the connection's INSERT, UPDATE and
// DELETE statements changed, added as each statement completes. A statement its own
// journal rolled back adds nothing; a trigger's statements add theirs as they complete,
// even when the statement that fired them is then rolled back, so the count can only
// overstate what is left changed, never miss it.
func (c *libConn) totalChanges() int64 { return sqlite3.Xsqlite3_total_changes64(c.tls, c.db) }

// inTransaction reports whether a transaction is open (sqlite3_get_autocommit is 0): an
// I/O error, a full disk or exhausted memory can end one with no ROLLBACK sent.
func (c *libConn) inTransaction() bool { return sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0 }

// close finalizes nothing (the caller finalizes its statements first) and closes the
// connection, freeing the connection's C memory.
func (c *libConn) close() {
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	if c.buf != 0 {
		sqlite3.Xsqlite3_free(c.tls, c.buf)
		c.buf, c.bufCap = 0, 0
	}
	if c.pp != 0 {
		sqlite3.Xsqlite3_free(c.tls, c.pp)
		c.pp = 0
	}
	c.tls.Close()
}

// libStmt is a statement prepared on a libConn, with what the driver read for every run
// read once: its columns' names and declared types, and each parameter's argument.
type libStmt struct {
	c    *libConn
	p    uintptr
	cols []string
	// timeCol[i]: column i is declared DATE, DATETIME or TIMESTAMP, whose text the
	// driver hands over as a time.Time when it parses.
	timeCol []bool
	// params[i] says which argument parameter i+1 takes: ord > 0 is the argument of
	// that ordinal; otherwise name is the parameter's name without its prefix, and the
	// argument is the first of that name (the driver's argFinder).
	params []libParam
}

func (s *libStmt) paramCount() int { return len(s.params) }

type libParam struct {
	ord  int
	name string
}

// prepare prepares query once; flags is SQLITE_PREPARE_PERSISTENT for a kept statement.
func (c *libConn) prepare(query string, flags uint32) (*libStmt, error) {
	z, err := libc.CString(query)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, z)
	rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, z, -1, flags, c.pp, c.pp+8)
	if rc != sqlite3.SQLITE_OK {
		return nil, c.errstr(rc)
	}
	p := *(*uintptr)(cmem(c.pp))
	if p == 0 {
		return nil, errors.New("sqlite: the statement is empty")
	}
	if tail := libc.GoString(*(*uintptr)(cmem(c.pp + 8))); strings.TrimSpace(tail) != "" {
		// The stores send one statement a text; a second would be silently dropped.
		sqlite3.Xsqlite3_finalize(c.tls, p)
		return nil, fmt.Errorf("sqlite: an own connection runs one statement a text, not %q", query)
	}
	s := &libStmt{c: c, p: p}
	n := int(sqlite3.Xsqlite3_column_count(c.tls, p))
	s.cols = make([]string, n)
	s.timeCol = make([]bool, n)
	for i := range n {
		s.cols[i] = libc.GoString(sqlite3.Xsqlite3_column_name(c.tls, p, int32(i)))
		switch strings.ToUpper(libc.GoString(sqlite3.Xsqlite3_column_decltype(c.tls, p, int32(i)))) {
		case "DATE", "DATETIME", "TIMESTAMP":
			s.timeCol[i] = true
		}
	}
	np := int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, p))
	s.params = make([]libParam, np)
	for i := range np {
		name := libc.GoString(sqlite3.Xsqlite3_bind_parameter_name(c.tls, p, int32(i+1)))
		s.params[i] = libParam{ord: i + 1}
		if name == "" {
			continue
		}
		s.params[i] = libParam{name: name[1:]}
		if (name[0] == '?' || name[0] == '$') && len(name) > 1 && name[1] >= '1' && name[1] <= '9' {
			if k, err := strconv.Atoi(name[1:]); err == nil {
				s.params[i].ord = k
			}
		}
	}
	return s, nil
}

func (s *libStmt) finalize() {
	if s.p != 0 {
		sqlite3.Xsqlite3_finalize(s.c.tls, s.p)
		s.p = 0
	}
}

// bind binds args (converted by namedArgs, so ordinals are 1..n in order) as the driver
// binds them.
func (s *libStmt) bind(args []driver.NamedValue) error {
	c := s.c
	// A name is looked for only among named arguments (sql.NamedArg, seldom passed).
	named := false
	for k := range args {
		named = named || args[k].Name != ""
	}
	for i, prm := range s.params {
		j := -1
		if prm.ord >= 1 && prm.ord <= len(args) {
			j = prm.ord - 1
		}
		if prm.name != "" && named {
			for k := range args {
				if args[k].Name == prm.name {
					if j < 0 || k < j {
						j = k
					}
					break
				}
			}
		}
		if j < 0 {
			if prm.name != "" && prm.ord == 0 {
				return fmt.Errorf("missing named argument %q", prm.name)
			}
			return fmt.Errorf("missing argument with index %d", i+1)
		}
		idx := int32(i + 1)
		var rc int32
		switch x := args[j].Value.(type) {
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, s.p, idx, x)
		case float64:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, s.p, idx, x)
		case bool:
			v := int32(0)
			if x {
				v = 1
			}
			rc = sqlite3.Xsqlite3_bind_int(c.tls, s.p, idx, v)
		case []byte:
			if x == nil {
				rc = sqlite3.Xsqlite3_bind_null(c.tls, s.p, idx)
				break
			}
			if err := c.grow(len(x)); err != nil {
				return err
			}
			copy(unsafe.Slice((*byte)(cmem(c.buf)), len(x)), x)
			rc = sqlite3.Xsqlite3_bind_blob(c.tls, s.p, idx, c.buf, int32(len(x)), sqliteTransient)
		case string:
			rc = s.bindText(idx, x)
		case time.Time:
			// The driver's default write format (no _time_format in ledger's DSN).
			rc = s.bindText(idx, x.String())
		case uuid.UUID:
			rc = s.bindUUID(idx, x)
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, s.p, idx)
		default:
			return fmt.Errorf("sqlite: invalid driver.Value type %T", x)
		}
		if rc != sqlite3.SQLITE_OK {
			return c.errstr(rc)
		}
	}
	return nil
}

// bindUUID binds u as the text its Value gives (String's), encoded straight into the
// connection's C buffer: through its Value, each id argument cost a string, its boxing and
// the driver's conversion (13 ids a cycle, docs/perf/issue-35.md).
func (s *libStmt) bindUUID(idx int32, u uuid.UUID) int32 {
	c := s.c
	if err := c.grow(36); err != nil {
		return sqlite3.SQLITE_NOMEM
	}
	b := unsafe.Slice((*byte)(cmem(c.buf)), 36)
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return sqlite3.Xsqlite3_bind_text(c.tls, s.p, idx, c.buf, 36, sqliteTransient)
}

func (s *libStmt) bindText(idx int32, x string) int32 {
	c := s.c
	if err := c.grow(len(x) + 1); err != nil {
		return sqlite3.SQLITE_NOMEM
	}
	copy(unsafe.Slice((*byte)(cmem(c.buf)), len(x)), x)
	return sqlite3.Xsqlite3_bind_text(c.tls, s.p, idx, c.buf, int32(len(x)), sqliteTransient)
}

// watch interrupts the statement when ctx ends while it runs, as the driver does; the
// returned stop ends the watch.
func (c *libConn) watch(ctx context.Context) (stop func() bool) {
	if ctx.Done() == nil {
		return nil
	}
	db := c.db
	done := make(chan struct{})
	after := context.AfterFunc(ctx, func() {
		defer close(done)
		// sqlite3_interrupt is one atomic store on the connection; it is safe from
		// another goroutine, on another TLS (the driver's interrupt does the same).
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_interrupt(tls, db)
		tls.Close()
	})
	// An interrupt already under way is waited for, so that it cannot land on a later
	// statement of the connection (a reader's is another Read's next): once it has landed,
	// the next statement to start clears it, no statement being active between two.
	return func() bool {
		if after() {
			return true
		}
		<-done
		return false
	}
}

// step runs one step of s; an error after ctx ended is ctx's error.
func (s *libStmt) step(ctx context.Context) (int32, error) {
	rc := sqlite3.Xsqlite3_step(s.c.tls, s.p)
	switch rc {
	case sqlite3.SQLITE_ROW, sqlite3.SQLITE_DONE:
		return rc, nil
	}
	if err := ctx.Err(); err != nil {
		return rc, err
	}
	return rc, s.c.errstr(rc)
}

// end resets s. Its bindings stay: they are SQLite's own copies (SQLITE_TRANSIENT), and
// sqlite3_clear_bindings would expire every statement whose plan read a bound value
// (STAT4 is compiled in), so that its next step prepared it again: measured at 3.7 times
// the cycle's instructions (docs/perf/issue-35.md).
func (s *libStmt) end() {
	sqlite3.Xsqlite3_reset(s.c.tls, s.p)
}

// libResult is a statement's result, as the driver's.
type libResult struct{ id, n int64 }

func (r libResult) LastInsertId() (int64, error) { return r.id, nil }
func (r libResult) RowsAffected() (int64, error) { return r.n, nil }

// exec runs s to its end (rows it answers are stepped over, as the driver's Exec does).
func (s *libStmt) exec(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer s.end()
	if err := s.bind(args); err != nil {
		return nil, err
	}
	if stop := s.c.watch(ctx); stop != nil {
		defer stop()
	}
	for {
		rc, err := s.step(ctx)
		if err != nil {
			return nil, err
		}
		if rc == sqlite3.SQLITE_DONE {
			break
		}
	}
	return libResult{
		id: sqlite3.Xsqlite3_last_insert_rowid(s.c.tls, s.c.db),
		n:  sqlite3.Xsqlite3_changes64(s.c.tls, s.c.db),
	}, nil
}

// libRows is a statement's rows as driver.Rows, for ownRows: the column names are the
// statement's, read at prepare.
type libRows struct {
	s    *libStmt
	ctx  context.Context
	stop func() bool
	// stmtOwned: s was prepared for this query alone and is finalized with the rows.
	stmtOwned bool
}

func (s *libStmt) query(ctx context.Context, args []driver.NamedValue, owned bool) (*libRows, error) {
	r := &libRows{}
	if err := s.start(ctx, args, owned, r); err != nil {
		return nil, err
	}
	return r, nil
}

// start binds args and makes r the rows of s (r is the connection's, reused).
func (s *libStmt) start(ctx context.Context, args []driver.NamedValue, owned bool, r *libRows) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.bind(args); err != nil {
		s.end()
		return err
	}
	*r = libRows{s: s, ctx: ctx, stop: s.c.watch(ctx), stmtOwned: owned}
	return nil
}

func (r *libRows) Columns() []string { return r.s.cols }

func (r *libRows) Close() error {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	r.s.end()
	if r.stmtOwned {
		r.s.finalize()
	}
	return nil
}

// Next reads a row into dest as the driver's rows.Next does for ledger's DSN (no
// _inttotime, _texttotime nor _loc).
func (r *libRows) Next(dest []driver.Value) error {
	if err := r.advance(); err != nil {
		return err
	}
	for i := range dest {
		dest[i] = r.value(i)
	}
	return nil
}

// advance steps to the next row; io.EOF after the last.
func (r *libRows) advance() error {
	rc, err := r.s.step(r.ctx)
	if err != nil {
		return err
	}
	if rc == sqlite3.SQLITE_DONE {
		return io.EOF
	}
	return nil
}

// value is column i of the current row as the driver hands it over.
func (r *libRows) value(i int) driver.Value {
	s := r.s
	tls, p := s.c.tls, s.p
	switch sqlite3.Xsqlite3_column_type(tls, p, int32(i)) {
	case sqlite3.SQLITE_INTEGER:
		return sqlite3.Xsqlite3_column_int64(tls, p, int32(i))
	case sqlite3.SQLITE_FLOAT:
		return sqlite3.Xsqlite3_column_double(tls, p, int32(i))
	case sqlite3.SQLITE_TEXT:
		v := r.text(i)
		if s.timeCol[i] {
			return parseDriverTime(v)
		}
		return v
	case sqlite3.SQLITE_BLOB:
		b := sqlite3.Xsqlite3_column_blob(tls, p, int32(i))
		n := int(sqlite3.Xsqlite3_column_bytes(tls, p, int32(i)))
		v := make([]byte, n) // a zero-length blob is empty, not nil (NULL), as the driver's
		if b != 0 && n > 0 {
			copy(v, unsafe.Slice((*byte)(cmem(b)), n))
		}
		return v
	}
	return nil
}

// text is column i's text, copied into Go memory.
func (r *libRows) text(i int) string { return string(r.textInPlace(i)) }

// textInPlace is column i's text where SQLite keeps it (nil when empty): valid until the
// statement steps, resets or reads the column as another type.
func (r *libRows) textInPlace(i int) []byte {
	tls, p := r.s.c.tls, r.s.p
	t := sqlite3.Xsqlite3_column_text(tls, p, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(tls, p, int32(i)))
	if t == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(cmem(t)), n)
}

// scanCol stores column i of the current row in dest as assign(dest, r.value(i)) would,
// without boxing the value: the destinations the stores scan most (a string from text, an
// integer from an integer, a nullable of either) are taken straight from the column; any
// other pairing goes through value and assign (TestWriterScansColumnsAsAssign).
func (r *libRows) scanCol(i int, dest any) error {
	s := r.s
	tls, p := s.c.tls, s.p
	ct := sqlite3.Xsqlite3_column_type(tls, p, int32(i))
	switch d := dest.(type) {
	case *string:
		if ct == sqlite3.SQLITE_TEXT && !s.timeCol[i] {
			*d = r.text(i)
			return nil
		}
	case *int64:
		if ct == sqlite3.SQLITE_INTEGER {
			*d = sqlite3.Xsqlite3_column_int64(tls, p, int32(i))
			return nil
		}
	case *int:
		if ct == sqlite3.SQLITE_INTEGER {
			*d = int(sqlite3.Xsqlite3_column_int64(tls, p, int32(i)))
			return nil
		}
	case **string:
		switch {
		case ct == sqlite3.SQLITE_NULL:
			*d = nil
			return nil
		case ct == sqlite3.SQLITE_TEXT && !s.timeCol[i]:
			v := r.text(i)
			*d = &v
			return nil
		}
	case **int64:
		switch ct {
		case sqlite3.SQLITE_NULL:
			*d = nil
			return nil
		case sqlite3.SQLITE_INTEGER:
			v := sqlite3.Xsqlite3_column_int64(tls, p, int32(i))
			*d = &v
			return nil
		}
	case *uuid.UUID:
		if u, ok := r.uuidText(i, ct); ok {
			*d = u
			return nil
		}
	case *uuid.NullUUID:
		if ct == sqlite3.SQLITE_NULL {
			*d = uuid.NullUUID{}
			return nil
		}
		if u, ok := r.uuidText(i, ct); ok {
			*d = uuid.NullUUID{UUID: u, Valid: true}
			return nil
		}
	}
	return assign(dest, r.value(i))
}

// uuidText is column i's text parsed as uuid.UUID's Scan parses a string, read in place;
// not ok when the column is not text, is empty (Scan leaves its UUID as it was) or does
// not parse (assign then reports it as Scan does).
func (r *libRows) uuidText(i int, ct int32) (uuid.UUID, bool) {
	if ct != sqlite3.SQLITE_TEXT || r.s.timeCol[i] {
		return uuid.UUID{}, false
	}
	b := r.textInPlace(i)
	if len(b) == 0 {
		return uuid.UUID{}, false
	}
	u, err := uuid.ParseBytes(b)
	return u, err == nil
}

// driverTimeFormats is the driver's parseTimeFormats (modernc.org/sqlite, sqlite.go).
var driverTimeFormats = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseDriverTime is the driver's conn.parseTime with no location: the text of a
// DATE, DATETIME or TIMESTAMP column as a time.Time when one of its layouts parses it,
// else the text itself.
func parseDriverTime(s string) any {
	ts := s
	if x := strings.Index(s, "m="); x > 0 {
		ts = s[:x]
	}
	if t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.TrimSpace(ts)); err == nil {
		return t
	}
	ts, _ = strings.CutSuffix(s, "Z")
	for _, f := range driverTimeFormats {
		if t, err := time.Parse(f, ts); err == nil {
			return t
		}
	}
	return s
}
