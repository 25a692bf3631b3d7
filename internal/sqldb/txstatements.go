package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx/reflectx"
	"modernc.org/sqlite"
)

// GetContext is sqlx's, with the error mapped.
func (tx *Tx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return nameStatement(tx.Dialect.MapError(tx.refused(tx.get(ctx, dest, query, args...))), query)
}

func (tx *Tx) get(ctx context.Context, dest any, query string, args ...any) error {
	return tx.query(ctx, (*scanPlans).getRow, dest, query, args)
}

// SelectContext is sqlx's, with the error mapped.
func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return nameStatement(tx.Dialect.MapError(tx.refused(tx.selectRows(ctx, dest, query, args...))), query)
}

func (tx *Tx) selectRows(ctx context.Context, dest any, query string, args ...any) error {
	return tx.query(ctx, (*scanPlans).selectRows, dest, query, args)
}

// query runs a statement that answers rows, on the transaction's own connection or its
// database/sql transaction (SQL Server), and hands them to scan (getRow or selectRows) with the
// mapper of what ran it.
func (tx *Tx) query(ctx context.Context, scan func(*scanPlans, rowSource, error, string, any, *reflectx.Mapper) error,
	dest any, query string, args []any) error {
	if err := tx.before(ctx, query, args); err != nil {
		return err
	}
	query, args = tx.withScope(query, args)
	if tx.wc != nil {
		rows, err := tx.wc.rows(tx.stmtContext(ctx), query, args)
		return scan(tx.plans, rows, err, query, dest, tx.wc.mapper)
	}
	rows, err := tx.tx.QueryContext(ctx, query, args...)
	return scan(tx.plans, sqlRows(rows), err, query, dest, tx.tx.Mapper)
}

// stmtContext is the context a statement on an own connection runs under: a group's
// statements are never interrupted (see grouped), so they get a context that cannot end,
// which also spares a watcher per statement; a read's end with its caller's.
func (tx *Tx) stmtContext(ctx context.Context) context.Context {
	if tx.grouped {
		return context.Background()
	}
	return ctx
}

// sqlRows is rows as a rowSource: nil stays nil (a failed query's rows are never read).
func sqlRows(rows *sql.Rows) rowSource {
	if rows == nil {
		return nil
	}
	return rows
}

// ExecContext is sqlx's, with the error mapped.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := tx.exec(ctx, query, args...)
	return res, nameStatement(tx.Dialect.MapError(tx.refused(err)), query)
}

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.before(ctx, query, args); err != nil {
		return nil, err
	}
	query, args = tx.withScope(query, args)
	if tx.wc != nil {
		return tx.wc.run(tx.stmtContext(ctx), query, args)
	}
	return tx.tx.ExecContext(ctx, query, args...)
}

// refused notes err in tx when it is a SQLite trigger's refusal, and returns it. The
// triggers of Runs and ExecutionAttempts refuse with RAISE(FAIL) (migration 45), which keeps
// what the statement wrote before the refusal, so that the cycle's updates need no
// statement journal: the write must then fail as a whole, and the committer fails it with
// the refusal even if its function swallowed the error and went on (runJob).
func (tx *Tx) refused(err error) error {
	if err == nil || tx.refusal != nil {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqliteConstraintTrigger {
		tx.refusal = err
	}
	return err
}
