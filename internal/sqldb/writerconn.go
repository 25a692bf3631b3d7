package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"

	"github.com/jmoiron/sqlx/reflectx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// writerConn is the SQLite writer's one connection, owned by the committer for as long as
// it runs. Owning it, the committer sends BEGIN IMMEDIATE, COMMIT, ROLLBACK and the
// savepoint statements itself, each prepared once on the connection, and runs every
// statement of a group through a statement prepared on the connection: no database/sql
// transaction, so no per-statement Tx.StmtContext wrapper and no BEGIN and COMMIT parsed
// again for every group (the driver prepares and finalizes both each time). It is
// measured in docs/perf/issue-35.md.
//
// The connection is the committer's own, opened on the file outside database/sql
// (libconn.go), so maintenance code that uses the writer pool directly (Raw, backups,
// migrations) waits for SQLite's write lock on the busy timeout, as another process would,
// instead of waiting for a connection the committer never gives back.
type writerConn struct {
	// lc is the connection, opened on the transpiled SQLite itself (libconn.go).
	lc *libConn
	// mapper is the writer pool's field mapper, for the scan plans.
	mapper *reflectx.Mapper
	stmts  map[string]*writerStmt
	// args is the argument buffer, reused from statement to statement.
	args []driver.NamedValue
	// rowsBuf is the rows of the statement being read, reused from statement to statement
	// while rowsBusy is false (its vals buffer with it), and lrows its libRows.
	rowsBuf  driverRows
	lrows    libRows
	rowsBusy bool
	// scratch is the scan's reusable memory for the rows of this connection (scan.go).
	scratch scanScratch
	// inTx: BEGIN succeeded and neither COMMIT nor ROLLBACK has run since.
	inTx bool
	// bad: the connection was found unusable; the next group opens a new one, and close
	// closes this one.
	bad bool
}

// writerStmt is a statement prepared on the writer's connection.
type writerStmt struct {
	ls *libStmt
	// plans are the scan plans of the statement's answers by destination type (a
	// statement scans into one or two types), so that the scan does not look its plan up
	// by the statement's text (scanPlans).
	plans []typePlan
}

type typePlan struct {
	t    reflect.Type
	plan []planField
}

// maxWriterStmts bounds the statements kept prepared on the writer's connection; a
// statement past it is prepared for its one run. The statements are the stores' fixed
// texts, far fewer.
const maxWriterStmts = 1024

const (
	beginSQL    = "BEGIN IMMEDIATE"
	commitSQL   = "COMMIT"
	rollbackSQL = "ROLLBACK"
)

func openWriterConn(db *DB) (*writerConn, error) {
	lc, err := openLibConn(db.sqlitePath, db.writerPragmas)
	if err != nil {
		return nil, err
	}
	return &writerConn{lc: lc, mapper: db.w.Mapper, stmts: map[string]*writerStmt{}}, nil
}

// prepare prepares query on the connection.
func (w *writerConn) prepare(_ context.Context, query string) (*writerStmt, error) {
	ls, err := w.lc.prepare(query, sqlite3.SQLITE_PREPARE_PERSISTENT)
	if err != nil {
		return nil, err
	}
	return &writerStmt{ls: ls}, nil
}

// stmt returns query prepared on the connection, and whether it is kept (false: the cache
// is full, and the caller closes it after its run).
func (w *writerConn) stmt(ctx context.Context, query string) (*writerStmt, bool, error) {
	if s, ok := w.stmts[query]; ok {
		return s, true, nil
	}
	s, err := w.prepare(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(w.stmts) >= maxWriterStmts {
		return s, false, nil
	}
	w.stmts[query] = s
	return s, true, nil
}

// run executes a statement that answers no rows.
func (w *writerConn) run(ctx context.Context, query string, args []any) (driver.Result, error) {
	s, kept, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if !kept {
		defer s.ls.finalize()
	}
	if w.args, err = namedArgs(w.args, args); err != nil {
		return nil, err
	}
	res, err := s.ls.exec(ctx, w.args)
	clear(w.args) // let go of the arguments' values
	w.noteBad(err)
	return res, err
}

// rows runs a statement that answers rows.
func (w *writerConn) rows(ctx context.Context, query string, args []any) (rowSource, error) {
	s, kept, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	closeStmt := func() {
		if !kept {
			s.ls.finalize()
		}
	}
	if w.args, err = namedArgs(w.args, args); err != nil {
		closeStmt()
		return nil, err
	}
	if w.rowsBusy {
		// Rows of another statement are still open (never on the stores' paths, which read
		// a statement's rows before sending the next): this one gets buffers of its own.
		rows, err := s.ls.query(ctx, w.args, !kept)
		clear(w.args)
		if err != nil {
			closeStmt()
			return nil, err
		}
		var ws *writerStmt
		if kept {
			ws = s
		}
		return newDriverRows(rows, nil, nil, ws, nil), nil
	}
	err = s.ls.start(ctx, w.args, !kept, &w.lrows)
	clear(w.args)
	if err != nil {
		closeStmt()
		return nil, err
	}
	var ws *writerStmt
	if kept {
		ws = s
	}
	w.rowsBusy = true
	w.rowsBuf.reset(&w.lrows, nil, ws, w)
	return &w.rowsBuf, nil
}

// exec runs a statement that takes no arguments (BEGIN, COMMIT, the savepoints).
func (w *writerConn) exec(ctx context.Context, query string) error {
	_, err := w.run(ctx, query, nil)
	return err
}

func (w *writerConn) begin(ctx context.Context) error {
	if err := w.exec(ctx, beginSQL); err != nil {
		return err
	}
	w.inTx = true
	return nil
}

// commit commits the transaction. If COMMIT fails and the transaction is still open (SQLite
// leaves it open after a busy COMMIT), it is rolled back, so the connection never carries a
// transaction into the next group.
func (w *writerConn) commit(ctx context.Context) error {
	err := w.exec(ctx, commitSQL)
	if err != nil {
		w.rollback(ctx)
		return err
	}
	w.inTx = false
	return nil
}

// rollback ends the transaction. Its error is dropped: after an error that ended the
// transaction on its own (an I/O error, say) SQLite answers "no transaction is active",
// and either way no transaction is left open.
func (w *writerConn) rollback(ctx context.Context) {
	if w.inTx {
		_ = w.exec(ctx, rollbackSQL)
	}
	w.inTx = false
}

// noteBad marks the connection bad when the driver said so (database/sql would have closed
// it): the next group takes a new one.
func (w *writerConn) noteBad(err error) {
	if err != nil && !usable(err) {
		w.bad = true
	}
}

// usable reports whether the connection can take the next group. Not after database/sql's
// or a driver's word that it is bad, nor after an error that leaves a SQLite connection's
// view of the file in doubt (an I/O error, a file that cannot be opened or is not a
// database, corruption, memory exhausted): the next group opens a new connection, which
// reads the file from the start.
func usable(err error) bool {
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOMEM:
			return false
		}
	}
	return true
}

// close finalizes the statements and closes the connection, freeing its C memory.
func (w *writerConn) close() {
	for _, s := range w.stmts {
		s.ls.finalize()
	}
	clear(w.stmts)
	w.lc.close()
}
