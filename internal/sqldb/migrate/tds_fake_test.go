package migrate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/tdsfake"
)

// openFake opens the service's database on the fake, under a context that bounds the test;
// both end with the test.
func openFake(t *testing.T, f *tdsfake.Server) (context.Context, *sqldb.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: f.DSN("")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, db
}

func TestMSSQLMigratorEndsItsOwnSession(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
	service := f.Log()[0].Conn
	mg, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	var migration int
	for _, b := range f.Log() {
		if b.Text == "SELECT DB_NAME()" {
			migration = b.Conn
		}
	}
	if migration == 0 || migration == service {
		t.Fatalf("golang-migrate ran on connection %d, the service's is %d: %+v", migration, service, f.Log())
	}
	for _, b := range f.Log() {
		if b.Conn == migration && b.Text == sqldb.MSSQLSessionInit && !b.Reset {
			t.Fatal("the migration session was not set up by the session init")
		}
	}
	select {
	case <-f.Ended(migration):
		t.Fatal("the migration session ended before the migrator closed")
	default:
	}
	mg.Close()
	select {
	case <-f.Ended(migration):
	case <-ctx.Done():
		t.Fatal("closing the migrator left its session open")
	}
	select {
	case <-f.Ended(service):
		t.Fatal("closing the migrator closed the service's connection")
	default:
	}
	if _, err := db.Raw().ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatalf("the service's pool after the migrator closed: %v", err)
	}
}

func TestMSSQLMigrationTableIsDboWhateverTheDefaultSchema(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
	mg, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	mg.Close()
	if _, err := ReadState(ctx, db); err != nil {
		t.Fatal(err)
	}
	var created, read bool
	for _, b := range f.Log() {
		switch {
		case b.Text == "SELECT SCHEMA_NAME()":
			t.Error("golang-migrate asked for the login's default schema: its table would follow it")
		case strings.Contains(b.Text, "[dbo].[schema_migrations]"):
			created = true
		case b.Text == "SELECT version, dirty FROM dbo."+migrationsTable:
			read = true
		}
	}
	if !created || !read {
		t.Errorf("golang-migrate's table in dbo: created %v, read by SchemaState %v; log %+v", created, read, f.Log())
	}
}
