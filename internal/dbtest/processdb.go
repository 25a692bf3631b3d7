package dbtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// testCollation is the default collation of every SQL Server test database: a
// case-insensitive one, as nearly every database a user creates has (the server's default,
// Azure SQL's default), so a statement that compares a table variable's string column with
// a BIN2 column without COLLATE fails in the suite (Msg 468) as it would for them.
const testCollation = "SQL_Latin1_General_CP1_CI_AS"

// processDatabase returns a DSN for this test process's own database on the server of
// baseDSN, creating it (with testCollation, and the base database's READ_COMMITTED_SNAPSHOT
// setting) when it does not exist. Each package's tests run as a process of their own, and
// the reaper works across tenants: on one shared database one package's Reap took back
// another's leases. The name carries the package's test binary and the process id; the
// databases are left for the server to be discarded with (CI) or dropped by hand.
func processDatabase(ctx context.Context, baseDSN string) (string, error) {
	u, err := url.Parse(baseDSN)
	if err != nil {
		return "", fmt.Errorf("LEDGER_TEST_MSSQL_DSN: %w", err)
	}
	q := u.Query()
	name := processDatabaseName(filepath.Base(os.Args[0]), os.Getpid())
	db, err := openRaw(ctx, baseDSN)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var rcsi int
	// Reading check: sys.databases of the connection's own database, one row.
	if err := db.QueryRowContext(ctx, `SELECT CAST(is_read_committed_snapshot_on AS int) FROM sys.databases WHERE database_id = DB_ID();`).Scan(&rcsi); err != nil {
		return "", fmt.Errorf("read the base database's settings: %w", err)
	}
	// Reading check: a plain batch (no arguments, so not inside sp_executesql); CREATE
	// DATABASE may not run in a user transaction and does not here. The name is made of
	// [a-z0-9_] only (processDatabaseName), so it is spliced in safely.
	stmt := fmt.Sprintf(`IF DB_ID(N'%[1]s') IS NULL CREATE DATABASE [%[1]s] COLLATE %[2]s;`, name, testCollation)
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return "", fmt.Errorf("create the test process's database %s: %w", name, err)
	}
	if rcsi == 1 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE [%s] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE;`, name)); err != nil {
			return "", fmt.Errorf("set READ_COMMITTED_SNAPSHOT on %s: %w", name, err)
		}
	}
	q.Set("database", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// processDatabaseName is the database of one test process: ledger_test_<package>_<pid>,
// lower-case letters, digits and '_' only, at most 128 characters (sysname).
func processDatabaseName(binary string, pid int) string {
	pkg := strings.TrimSuffix(strings.ToLower(binary), ".test")
	var b strings.Builder
	for _, r := range pkg {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:80]
	}
	return fmt.Sprintf("ledger_test_%s_%d", s, pid)
}
