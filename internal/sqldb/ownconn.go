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

// ownConn is a SQLite connection of this process's own, opened on the file outside
// database/sql (libconn.go): the writer's one, owned by the committer for as long as it
// runs, and each of the readers' (readerpool.go), owned by one Read at a time. Owning it,
// its user sends BEGIN, COMMIT, ROLLBACK and the savepoint statements itself, each prepared
// once on the connection, and runs every statement through a statement prepared on the
// connection and kept there: no database/sql transaction, so no per-statement
// Tx.StmtContext wrapper, no BEGIN and COMMIT parsed again for every transaction (the
// driver prepares and finalizes both each time) and no goroutine per transaction watching
// its context. It is measured in docs/perf/issue-35.md.
//
// The writer's connection being the committer's own, maintenance code that uses the writer
// pool directly (Raw, backups, migrations) waits for SQLite's write lock on the busy
// timeout, as another process would, instead of waiting for a connection the committer
// never gives back.
type ownConn struct {
	// lc is the connection, opened on the transpiled SQLite itself (libconn.go).
	lc *libConn
	// mapper is the writer pool's field mapper, for the scan plans.
	mapper *reflectx.Mapper
	// beginSQL is the statement that begins a transaction: BEGIN IMMEDIATE for the writer
	// (it takes the write lock at once), BEGIN for a reader (a deferred read transaction).
	beginSQL string
	stmts    map[string]*ownStmt
	// maxStmts bounds stmts; a statement past it is prepared for its one run.
	maxStmts int
	// args is the argument buffer, reused from statement to statement.
	args []driver.NamedValue
	// rowsBuf is the rows of the statement being read, reused from statement to statement
	// while rowsBusy is false (its vals buffer with it), and lrows its libRows.
	rowsBuf  ownRows
	lrows    libRows
	rowsBusy bool
	// scratch is the scan's reusable memory for the rows of this connection (scan.go).
	scratch scanScratch
	// inTx: BEGIN succeeded and neither COMMIT nor ROLLBACK has run since.
	inTx bool
	// bad: the connection was found unusable; its user opens a new one, and close closes
	// this one.
	bad bool
}

// ownStmt is a statement prepared on an own connection.
type ownStmt struct {
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

// maxWriterStmts bounds the statements kept prepared on the writer's connection. The
// statements are the stores' fixed texts, far fewer. maxReaderStmts bounds each reader's:
// the reads' texts are fixed too, but listings put their filters together, so there are
// more of them, and there are several readers.
const (
	maxWriterStmts = 1024
	maxReaderStmts = 256
)

const (
	beginWriteSQL = "BEGIN IMMEDIATE"
	beginReadSQL  = "BEGIN"
	commitSQL     = "COMMIT"
	rollbackSQL   = "ROLLBACK"
)

// openWriterConn opens the committer's connection, through the VFS that writes a commit's
// log frames in one system call (walbatch.go).
func openWriterConn(db *DB) (*ownConn, error) {
	if _, err := walBatchOnce(); err != nil {
		return nil, err
	}
	return openOwnConn(db, db.writerPragmas, beginWriteSQL, maxWriterStmts, walBatchVFSName)
}

func openOwnConn(db *DB, pragmas []string, begin string, maxStmts int, vfs string) (*ownConn, error) {
	lc, err := openLibConn(db.sqlitePath, pragmas, vfs)
	if err != nil {
		return nil, err
	}
	return &ownConn{lc: lc, mapper: db.w.Mapper, beginSQL: begin, stmts: map[string]*ownStmt{}, maxStmts: maxStmts}, nil
}

// prepare prepares query on the connection.
func (w *ownConn) prepare(_ context.Context, query string) (*ownStmt, error) {
	ls, err := w.lc.prepare(query, sqlite3.SQLITE_PREPARE_PERSISTENT)
	if err != nil {
		return nil, err
	}
	return &ownStmt{ls: ls}, nil
}

// stmt returns query prepared on the connection, and whether it is kept (false: the cache
// is full, and the caller closes it after its run).
func (w *ownConn) stmt(ctx context.Context, query string) (*ownStmt, bool, error) {
	if s, ok := w.stmts[query]; ok {
		return s, true, nil
	}
	s, err := w.prepare(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(w.stmts) >= w.maxStmts {
		return s, false, nil
	}
	w.stmts[query] = s
	return s, true, nil
}

// run executes a statement that answers no rows.
func (w *ownConn) run(ctx context.Context, query string, args []any) (driver.Result, error) {
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
func (w *ownConn) rows(ctx context.Context, query string, args []any) (rowSource, error) {
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
	var ws *ownStmt // the rows' kept statement, for its scan plans
	if kept {
		ws = s
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
		return newOwnRows(rows, ws, nil), nil
	}
	err = s.ls.start(ctx, w.args, !kept, &w.lrows)
	clear(w.args)
	if err != nil {
		closeStmt()
		return nil, err
	}
	w.rowsBusy = true
	w.rowsBuf.reset(&w.lrows, ws, w)
	return &w.rowsBuf, nil
}

// exec runs a statement that takes no arguments (BEGIN, COMMIT, the savepoints).
func (w *ownConn) exec(ctx context.Context, query string) error {
	_, err := w.run(ctx, query, nil)
	return err
}

func (w *ownConn) begin(ctx context.Context) error {
	if err := w.exec(ctx, w.beginSQL); err != nil {
		return err
	}
	w.inTx = true
	return nil
}

// commit commits the transaction. If COMMIT fails and the transaction is still open (SQLite
// leaves it open after a busy COMMIT), it is rolled back, so the connection never carries a
// transaction into the next group.
func (w *ownConn) commit(ctx context.Context) error {
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
func (w *ownConn) rollback(ctx context.Context) {
	if w.inTx {
		_ = w.exec(ctx, rollbackSQL)
	}
	w.inTx = false
}

// leftNothing reports whether a write that failed since totalChanges was before left the
// transaction as it found it: no row counted as changed, the transaction still open, and
// the connection still usable. A connection found unusable is not trusted with the count:
// a corrupt index fails a one-row statement after it removed an entry, with no row counted.
func (w *ownConn) leftNothing(before int64) bool {
	return w.lc.totalChanges() == before && w.lc.inTransaction() && !w.bad
}

// noteBad marks the connection bad when the driver said so (database/sql would have closed
// it): the next group takes a new one.
func (w *ownConn) noteBad(err error) {
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
func (w *ownConn) close() {
	for _, s := range w.stmts {
		s.ls.finalize()
	}
	clear(w.stmts)
	w.lc.close()
}
