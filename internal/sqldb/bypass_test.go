package sqldb_test

import (
	"context"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/check"
)

// The maintenance bypass of row-level security, on a real SQL Server (LEDGER_TEST_MSSQL_DSN).
// SQLite has no row-level security and no session context: its stores filter on TenantId
// themselves, which every store's cross-tenant cases check, so these cases skip it.

func TestMaintenanceBypass(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		if tgt.Name == "sqlite" {
			t.Skip("SQLite has no row-level security or session context (see the comment above)")
		}
		ctx := context.Background()

		t.Run("ATenantTransactionNeverInheritsTheBypass", func(t *testing.T) {
			db := tgt.Open(t, dbtest.Options{})
			// One connection: the tenant transaction runs on the session the maintenance
			// transaction set the bypass on.
			db.Raw().SetMaxOpenConns(1)
			other := dbtest.NewTenant(t, db)
			var maint int
			if err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				return tx.GetContext(ctx, &maint, `SELECT CAST(SESSION_CONTEXT(N'LedgerMaintenance') AS int)`)
			}); err != nil || maint != 1 {
				t.Fatalf("maintenance scope: bypass %d, %v", maint, err)
			}
			// A tenant id that names the bypass key is only a value.
			for _, tenant := range []string{"LedgerMaintenance", "1"} {
				var got struct {
					Maint   int    `db:"Maint"`
					Tenant  string `db:"Tenant"`
					Visible int    `db:"Visible"`
				}
				err := db.Read(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
					return tx.GetContext(ctx, &got, `SELECT CAST(SESSION_CONTEXT(N'LedgerMaintenance') AS int) AS Maint,
    CAST(SESSION_CONTEXT(N'TenantId') AS nvarchar(64)) AS Tenant,
    (SELECT COUNT(*) FROM dbo.Tenants WHERE TenantId = @p1) AS Visible`, other)
				})
				if err != nil {
					t.Fatal(err)
				}
				if got.Maint != 0 || got.Tenant != tenant || got.Visible != 0 {
					t.Fatalf("tenant %q after a maintenance transaction: %+v", tenant, got)
				}
			}
		})

		t.Run("TheBypassNeedsTheRole", func(t *testing.T) {
			db := tgt.Open(t, dbtest.Options{})
			other := dbtest.NewTenant(t, db)
			conn, err := db.Raw().Connx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Statements without arguments go as plain batches, so EXECUTE AS and the
			// session key stay on this session (sp_executesql would revert them).
			exec := func(sql string) {
				t.Helper()
				if _, err := conn.ExecContext(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			visibleAs := func() int {
				t.Helper()
				exec(`EXECUTE AS USER = N'ledger_test_nomaint';`)
				defer exec(`REVERT;`)
				exec(`EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = 1;`)
				var n int
				if err := conn.GetContext(ctx, &n, `SELECT COUNT(*) FROM dbo.Tenants WHERE TenantId = N'`+other+`';`); err != nil {
					t.Fatal(err)
				}
				return n
			}
			exec(`IF DATABASE_PRINCIPAL_ID(N'ledger_test_nomaint') IS NULL CREATE USER [ledger_test_nomaint] WITHOUT LOGIN;`)
			exec(`GRANT SELECT ON [dbo].[Tenants] TO [ledger_test_nomaint];`)
			t.Cleanup(func() {
				_, _ = db.Raw().ExecContext(context.Background(), `ALTER ROLE [ledger_maintenance] DROP MEMBER [ledger_test_nomaint];`)
			})
			exec(`IF IS_ROLEMEMBER(N'ledger_maintenance', N'ledger_test_nomaint') = 1 ALTER ROLE [ledger_maintenance] DROP MEMBER [ledger_test_nomaint];`)
			if n := visibleAs(); n != 0 {
				t.Fatalf("a user outside ledger_maintenance saw another tenant's row through the session key")
			}
			exec(`ALTER ROLE [ledger_maintenance] ADD MEMBER [ledger_test_nomaint];`)
			if n := visibleAs(); n != 1 {
				t.Fatalf("a member of ledger_maintenance sees %d rows of another tenant, want 1", n)
			}
		})

		t.Run("TheCheckPassesOnTheTestDatabase", func(t *testing.T) {
			db := tgt.Open(t, dbtest.Options{})
			r := check.Run(ctx, db, check.ForServe)
			if !r.OK() {
				t.Fatalf("ledger check on the conformance database: %v", r.Err())
			}
			for _, c := range r.Checks {
				if c.Name == "xact-abort" || c.Name == "session-options" {
					if c.Status != check.StatusOK {
						t.Fatalf("%s: %s", c.Name, c.Detail)
					}
				}
			}
		})
	})
}
