package sqldb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// A collation conflict (SQL Server 468 and its kin, mapped to ErrCollationConflict) is the
// statement's defect: the error a store gets names the statement that does the work, past
// the table variable's DECLARE in front of it, so the 500's log line says what to fix.
// SQLite never raises one: the statement hook injects it.
func TestCollationConflictNamesTheStatement(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx := context.Background()
	db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if strings.Contains(st.Query, "FROM Tenants") {
			return errors.Join(errors.New("mssql: Cannot resolve the collation conflict (468)"), sqldb.ErrCollationConflict)
		}
		return nil
	})
	const stmt = "-- reading check\nDECLARE @t TABLE (TenantId nvarchar(64));\nSELECT COUNT(*) FROM Tenants WHERE TenantId = ?"
	for name, run := range map[string]func(tx *sqldb.Tx) error{
		"get":    func(tx *sqldb.Tx) error { var n int; return tx.GetContext(ctx, &n, stmt, "x") },
		"select": func(tx *sqldb.Tx) error { var n []int; return tx.SelectContext(ctx, &n, stmt, "x") },
		"exec":   func(tx *sqldb.Tx) error { _, err := tx.ExecContext(ctx, stmt, "x"); return err },
	} {
		err := db.Read(ctx, sqldb.MaintenanceScope(), run)
		var se *sqldb.StatementError
		if !errors.Is(err, sqldb.ErrCollationConflict) || !errors.As(err, &se) {
			t.Fatalf("%s: err = %v; want ErrCollationConflict inside a StatementError", name, err)
		}
		if se.Statement != "SELECT COUNT(*) FROM Tenants WHERE TenantId = ?" {
			t.Errorf("%s: the error names %q; want the SELECT line", name, se.Statement)
		}
		if strings.Count(err.Error(), "statement \"") != 1 {
			t.Errorf("%s: the statement is named more than once: %v", name, err)
		}
	}
	// Other errors are not wrapped.
	db.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error { return sqldb.ErrRefused })
	err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error { var n int; return tx.GetContext(ctx, &n, stmt, "x") })
	var se *sqldb.StatementError
	if errors.As(err, &se) {
		t.Errorf("a refusal was wrapped with its statement: %v", err)
	}
}
