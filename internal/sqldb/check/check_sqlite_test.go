package check_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/check"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// The SQLite checks run for real, on files made here.

func checkNames(r check.Report) []string {
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	return names
}

func findCheck(t *testing.T, r check.Report, name string) check.Result {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %v", name, checkNames(r))
	return check.Result{}
}

func migratedFile(t *testing.T, sync string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path, SQLiteSync: sync})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSQLiteChecksPassOnAMigratedFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := migratedFile(t, "")
	r, err := check.Database(ctx, sqldb.Config{DSN: path}, check.ForServe)
	if err != nil {
		t.Fatal(err)
	}
	if want := "database-file journal-mode durability foreign-keys schema"; strings.Join(checkNames(r), " ") != want {
		t.Fatalf("checks %v, want %s", checkNames(r), want)
	}
	for _, c := range r.Checks {
		if c.Status != check.StatusOK || !c.Required {
			t.Errorf("%s: %s %s (%s)", c.Name, c.Status, c.Detail, c.Fix)
		}
	}
	if !r.OK() || r.Err() != nil || r.Dialect != "sqlite" || r.Purpose != "serve" {
		t.Fatalf("report %+v", r)
	}
	if d := findCheck(t, r, "durability").Detail; !strings.Contains(d, "NORMAL") {
		t.Fatalf("durability says %q, want NORMAL (the default)", d)
	}
	if d := findCheck(t, r, "journal-mode").Detail; !strings.Contains(d, "WAL") {
		t.Fatalf("journal mode says %q", d)
	}
}

func TestSQLiteCheckReportsFullDurability(t *testing.T) {
	t.Parallel()
	path := migratedFile(t, "full")
	r, err := check.Database(context.Background(), sqldb.Config{DSN: path, SQLiteSync: "full"}, check.ForServe)
	if err != nil {
		t.Fatal(err)
	}
	if d := findCheck(t, r, "durability").Detail; !strings.Contains(d, "FULL") {
		t.Fatalf("durability says %q, want FULL", d)
	}
}

func TestSQLiteCheckFailsOnASchemaBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path}) // opened, never migrated
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := check.Run(ctx, db, check.ForServe)
	schema := findCheck(t, r, "schema")
	if schema.Status != check.StatusFail || !strings.Contains(schema.Fix, "ledger migrate up") {
		t.Fatalf("schema check on an empty file: %+v", schema)
	}
	if r.OK() || r.Err() == nil {
		t.Fatal("a database with no schema passed")
	}
	// Checking for a migration leaves the schema to the migration.
	m := check.Run(ctx, db, check.ForMigrate)
	if !m.OK() || strings.Contains(strings.Join(checkNames(m), " "), "schema") {
		t.Fatalf("the migrate checks: %+v", m)
	}
}

func TestSQLiteCheckDoesNotCreateAMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nothing-here", "ledger.db")
	r, err := check.Database(context.Background(), sqldb.Config{DSN: path}, check.ForServe)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || len(r.Checks) != 1 || r.Checks[0].Name != "database-file" || !strings.Contains(r.Checks[0].Detail, path) {
		t.Fatalf("report %+v", r)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the check created %s", filepath.Dir(path))
	}
}
