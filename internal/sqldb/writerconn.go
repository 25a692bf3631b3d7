package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jmoiron/sqlx"
)

// writerConn is the SQLite writer's one connection, owned by the committer for as long as
// it runs. Owning it, the committer sends BEGIN IMMEDIATE, COMMIT, ROLLBACK and the
// savepoint statements itself, each prepared once on the connection, and runs every
// statement of a group through a statement prepared on the connection: no database/sql
// transaction, so no per-statement Tx.StmtContext wrapper and no BEGIN and COMMIT parsed
// again for every group (the driver prepares and finalizes both each time). It is
// measured in docs/perf/issue-35.md.
//
// The connection comes from a pool of its own (DB.gw), so maintenance code that uses the
// writer pool directly (Raw, backups, migrations) waits for SQLite's write lock on the busy
// timeout, as another process would, instead of waiting for a connection the committer
// never gives back.
type writerConn struct {
	conn  *sqlx.Conn
	stmts map[string]*sqlx.Stmt
	// inTx: BEGIN succeeded and neither COMMIT nor ROLLBACK has run since.
	inTx bool
}

// maxWriterStmts bounds the statements kept prepared on the writer's connection; a
// statement past it runs unprepared. The statements are the stores' fixed texts, far fewer.
const maxWriterStmts = 1024

const (
	beginSQL    = "BEGIN IMMEDIATE"
	commitSQL   = "COMMIT"
	rollbackSQL = "ROLLBACK"
)

func openWriterConn(ctx context.Context, pool *sqlx.DB) (*writerConn, error) {
	conn, err := pool.Connx(ctx)
	if err != nil {
		return nil, err
	}
	return &writerConn{conn: conn, stmts: map[string]*sqlx.Stmt{}}, nil
}

// stmt returns query prepared on the connection, or nil when the cache is full.
func (w *writerConn) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if s, ok := w.stmts[query]; ok {
		return s, nil
	}
	if len(w.stmts) >= maxWriterStmts {
		return nil, nil
	}
	s, err := w.conn.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = s
	return s, nil
}

// exec runs a statement that takes no arguments (BEGIN, COMMIT, the savepoints).
func (w *writerConn) exec(ctx context.Context, query string) error {
	s, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	if s == nil {
		_, err = w.conn.ExecContext(ctx, query)
		return err
	}
	_, err = s.ExecContext(ctx)
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

// usable reports whether the connection can take the next group: a connection the driver
// or database/sql declared bad is dropped and a new one taken.
func usable(err error) bool {
	return !errors.Is(err, sql.ErrConnDone) && !errors.Is(err, driver.ErrBadConn)
}

func (w *writerConn) close() {
	for _, s := range w.stmts {
		_ = s.Close()
	}
	clear(w.stmts)
	_ = w.conn.Close()
}
