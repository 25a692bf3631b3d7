package sqldb_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestStatementHookSeesEveryStatementOfItsDB: the hook sees each statement of a write and a
// read, with its arguments, and nothing of another DB's transactions; its own statements
// do not reach it again; nil removes it.
func TestStatementHookSeesEveryStatementOfItsDB(t *testing.T) {
	t.Parallel()
	db, other := sqliteDB(t), sqliteDB(t)
	ctx := context.Background()
	var seen []sqldb.Statement
	db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		seen = append(seen, st)
		// A statement of the hook's own: it runs on the same transaction, unseen.
		var n int
		return tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM Tenants`)
	})
	err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		if _, err := tx.ExecContext(ctx, insertTenant, "h-1"); err != nil {
			return err
		}
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM Tenants WHERE TenantId = ?`, "h-1"); err != nil {
			return err
		}
		var ids []string
		return tx.SelectContext(ctx, &ids, `SELECT TenantId FROM Tenants`)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, insertTenant, "elsewhere")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		var n int
		return tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM Tenants`)
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Fatalf("the hook saw %d statements, want the write's 3 and the read's 1: %v", len(seen), seen)
	}
	if seen[0].Query != insertTenant || len(seen[0].Args) != 1 || seen[0].Args[0] != "h-1" {
		t.Fatalf("first statement %+v, want the insert with its argument", seen[0])
	}
	db.SetStatementHook(nil)
	if err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, insertTenant, "h-2")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Fatalf("a removed hook saw %d more statements", len(seen)-4)
	}
}

// TestStatementHookInjectsAConcurrentWinner: the hook writes the row a concurrent writer
// would have committed, just before the statement that collides with it; the statement
// fails with a mapped conflict, the transaction stays usable, and the recovery path sees
// the winner's row (the path SQL Server takes under concurrency, made to run on SQLite).
func TestStatementHookInjectsAConcurrentWinner(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx := context.Background()
	db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if st.Query != insertTenant {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (?, 7, ?)`,
			st.Args[0], nowText)
		return err
	})
	var winner int
	err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, insertTenant, "raced")
		if !sqldb.IsConflict(err) {
			return errors.New("the insert did not collide with the injected row: " + errString(err))
		}
		return tx.GetContext(ctx, &winner, `SELECT MaxLeasedRuns FROM Tenants WHERE TenantId = ?`, "raced")
	})
	if err != nil {
		t.Fatal(err)
	}
	if winner != 7 || tenantCount(t, db, "raced") != 1 {
		t.Fatalf("recovery read MaxLeasedRuns %d, want the winner's 7, and one row", winner)
	}
}

// TestStatementHookErrorReplacesTheStatement: an error from the hook is the statement's
// error and the statement does not run; a retryable one makes Write run the transaction
// again, as a deadlock on SQL Server would.
func TestStatementHookErrorReplacesTheStatement(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx := context.Background()
	var calls atomic.Int32
	db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if strings.HasPrefix(st.Query, "INSERT") && calls.Add(1) == 1 {
			return sqldb.ErrRetryable
		}
		return nil
	})
	runs := 0
	err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		runs++
		_, err := tx.ExecContext(ctx, insertTenant, "retried")
		return err
	})
	if err != nil || runs != 2 || tenantCount(t, db, "retried") != 1 {
		t.Fatalf("got %v after %d runs and %d rows; want success on the second run with one row",
			err, runs, tenantCount(t, db, "retried"))
	}
	refused := errors.New("refused by the hook")
	db.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error { return refused })
	err = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, insertTenant, "never")
		return err
	})
	if !errors.Is(err, refused) || tenantCount(t, db, "never") != 0 {
		t.Fatalf("got %v, want the hook's error and no row", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// Every statement goes through Tx's own methods (mapped errors, the statement hook, the
// pending scope): the sqlx transaction's methods are not promoted onto it.
func TestTxSendsStatementsOnlyThroughItsOwnMethods(t *testing.T) {
	t.Parallel()
	tx := reflect.TypeOf(&sqldb.Tx{})
	for _, m := range []string{"Exec", "Queryx", "QueryxContext", "QueryRowxContext", "NamedExec", "NamedExecContext",
		"PrepareContext", "Preparex", "Commit", "Rollback", "MustExec"} {
		if _, ok := tx.MethodByName(m); ok {
			t.Errorf("sqldb.Tx has %s: a statement sent through it skips error mapping, the hook and the scope", m)
		}
	}
	for _, m := range []string{"ExecContext", "GetContext", "SelectContext", "Rebind"} {
		if _, ok := tx.MethodByName(m); !ok {
			t.Errorf("sqldb.Tx lacks %s", m)
		}
	}
}
