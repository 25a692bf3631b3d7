package sqldb

import "context"

// Statement is a statement a Tx is about to send, as a StatementHook sees it.
type Statement struct {
	// Query is the statement's text, exactly as the store passed it.
	Query string
	// Args are its arguments, as the store passed them (not yet converted by the driver).
	Args []any
}

// StatementHook is a test's look at every statement a Tx of one DB sends, called just
// before the statement runs. It may run statements of its own on tx first (they see and
// are seen by the transaction, and are not passed to the hook again), and it may return an
// error, which the statement then returns instead of running: errors the dialect maps
// (ErrRetryable, a *ConflictError, …) pass through as they are.
//
// Uses: fault injection on SQLite, where one writer never collides, by writing the row a
// concurrent winner would have written just before the statement that would collide with
// it (so every conflict-recovery path SQL Server can take runs in CI); and counting the
// statements a request sends.
//
// A hook is called from the goroutine running the transaction, possibly from several
// transactions at once; it must be safe for that. Statements a Tx does not send through
// ExecContext, GetContext or SelectContext (the group commit's savepoints, BEGIN and
// COMMIT), and the statement that sets a transaction's scope (SQL Server's session
// context), are not seen.
type StatementHook func(ctx context.Context, tx *Tx, st Statement) error

// hookBox lets an atomic.Pointer hold a func.
type hookBox struct{ fn StatementHook }

// SetStatementHook installs hook for every transaction this DB begins from now on (nil
// removes it). It belongs to this DB alone, never to the process. Tests only: production
// code never sets one.
func (db *DB) SetStatementHook(hook StatementHook) {
	if hook == nil {
		db.hook.Store(nil)
		return
	}
	db.hook.Store(&hookBox{fn: hook})
}

func (db *DB) statementHook() StatementHook {
	if b := db.hook.Load(); b != nil {
		return b.fn
	}
	return nil
}

// before calls the transaction's hook, if any, for a statement about to run. Statements
// the hook itself runs on tx skip it.
func (tx *Tx) before(ctx context.Context, query string, args []any) error {
	if tx.hook == nil || tx.inHook {
		return nil
	}
	tx.inHook = true
	defer func() { tx.inHook = false }()
	return tx.hook(ctx, tx, Statement{Query: query, Args: args})
}
