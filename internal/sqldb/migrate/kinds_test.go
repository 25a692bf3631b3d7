package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	mssqlmig "github.com/ledger-dev/ledger/migrations/mssql"
	sqlitemig "github.com/ledger-dev/ledger/migrations/sqlite"
)

// Every migration of both dialects declares its kind on its first line, exactly; both
// folders hold the same versions and titles.
func TestEveryMigrationDeclaresItsKind(t *testing.T) {
	t.Parallel()
	ms, err := migrate.ReadMigrations(mssqlmig.FS)
	if err != nil {
		t.Fatalf("migrations/mssql: %v", err)
	}
	lite, err := migrate.ReadMigrations(sqlitemig.FS)
	if err != nil {
		t.Fatalf("migrations/sqlite: %v", err)
	}
	if len(ms) != len(lite) || len(ms) < 20 {
		t.Fatalf("%d SQL Server and %d SQLite migrations", len(ms), len(lite))
	}
	for i := range ms {
		if ms[i].Version != lite[i].Version || ms[i].Title != lite[i].Title {
			t.Errorf("migration %d %s (SQL Server) against %d %s (SQLite)", ms[i].Version, ms[i].Title, lite[i].Version, lite[i].Title)
		}
	}
}

func TestReadMigrationsRefusesAnUndeclaredKind(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"no kind line":            "-- Adds a table.\nCREATE TABLE T (a int);\n",
		"not exactly the form":    "-- migration: Additive\nCREATE TABLE T (a int);\n",
		"trailing words":          "-- migration: additive (mostly)\nCREATE TABLE T (a int);\n",
		"breaking without a why":  "-- migration: breaking\nDROP TABLE T;\n",
		"kind on the second line": "-- A table.\n-- migration: additive\nCREATE TABLE T (a int);\n",
	}
	for name, text := range cases {
		_, err := migrate.ReadMigrations(fstest.MapFS{"000001_t.up.sql": {Data: []byte(text)}, "000001_t.down.sql": {Data: []byte("x")}})
		if err == nil || !strings.Contains(err.Error(), "000001_t.up.sql") {
			t.Errorf("%s: ReadMigrations = %v; want an error naming the file", name, err)
		}
	}
	got, err := migrate.ReadMigrations(fstest.MapFS{
		"000002_b.up.sql": {Data: []byte("-- migration: breaking\r\n-- Drops T.\r\nDROP TABLE T;\r\n")},
		"000001_a.up.sql": {Data: []byte("-- migration: additive\nCREATE TABLE T (a int);\n")},
	})
	if err != nil || len(got) != 2 || got[0].Kind != migrate.Additive || got[1].Kind != migrate.Breaking || got[1].Reason != "Drops T." {
		t.Fatalf("ReadMigrations = %+v, %v", got, err)
	}
}

// withExtra is the embedded SQLite migrations plus extra files.
func withExtra(t *testing.T, extra map[string]string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	names, _ := fs.Glob(sqlitemig.FS, "*.sql")
	for _, n := range names {
		b, err := fs.ReadFile(sqlitemig.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = &fstest.MapFile{Data: b}
	}
	for n, text := range extra {
		out[n] = &fstest.MapFile{Data: []byte(text)}
	}
	return out
}

// The kinds are recorded when a migration applies, dropped when it is taken back, and
// an applied migration with no record is not taken for additive; `migrate up` of an
// older binary leaves a newer additive schema alone and refuses a breaking one by name.
func TestMigrationKindsAreRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	newer := withExtra(t, map[string]string{
		"000900_probe.up.sql":   "-- migration: additive\nCREATE TABLE Probe (Id INTEGER);\n",
		"000900_probe.down.sql": "DROP TABLE Probe;\n",
	})
	nb, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Migrations: newer})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	mg, err := migrate.New(nb)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := mg.UpApplied()
	mg.Close() // its file lock would hold off the older binary's migrator
	if err != nil || len(applied) < 21 || applied[len(applied)-1].Version != 900 || applied[10].Kind != migrate.Breaking {
		t.Fatalf("UpApplied = %d migrations (%v); want every one to 900, 11 breaking", len(applied), err)
	}
	var kinds []string
	if err := nb.Raw().Select(&kinds, `SELECT Version || ' ' || Kind FROM SchemaMigrationKinds ORDER BY Version`); err != nil {
		t.Fatal(err)
	}
	if len(kinds) != len(applied) || kinds[3] != "4 breaking" || kinds[len(kinds)-1] != "900 additive" {
		t.Fatalf("recorded kinds %v", kinds)
	}

	old := openFile(t, path) // this binary: no 900
	omg, err := migrate.New(old)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := omg.UpApplied(); err != nil || len(got) != 0 {
		t.Fatalf("older binary's migrate up over an additive newer schema = %v, %v; want nothing to do", got, err)
	}
	omg.Close()

	// A migration whose record is missing (the run was killed before it) is not additive.
	if _, err := nb.Raw().Exec(`DELETE FROM SchemaMigrationKinds WHERE Version = 900`); err != nil {
		t.Fatal(err)
	}
	_, _, err = migrate.Servable(ctx, old)
	var se *migrate.SchemaError
	if !errors.As(err, &se) || se.Breaking == nil || se.Breaking.Version != 900 || !strings.Contains(err.Error(), "no record") {
		t.Fatalf("Servable with 900 unrecorded = %v; want it refused as unrecorded", err)
	}
	// The newer binary's next migrate up mends the record.
	if mg, err = migrate.New(nb); err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := migrate.Servable(ctx, old); err != nil {
		t.Fatalf("after the record was mended: %v", err)
	}

	// Taken back, its record goes too.
	if err := mg.Down(1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := nb.Raw().Get(&n, `SELECT COUNT(*) FROM SchemaMigrationKinds WHERE Version = 900`); err != nil || n != 0 {
		t.Fatalf("after down, %d rows for 900 (%v)", n, err)
	}
}

// After a wrong `migrate force` below the real schema, `migrate up` fails on what already
// exists; it says which version to force back to, read from the recorded kinds (issue 30
// item 10).
func TestMigrateUpAfterAWrongForceSaysHowToRecover(t *testing.T) {
	t.Parallel()
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	st, _ := mg.State()
	if err := mg.Force(16); err != nil {
		t.Fatal(err)
	}
	err = mg.Up()
	want := fmt.Sprintf("run `ledger migrate force %d`, then `ledger migrate up`", st.Version)
	if err == nil || !strings.Contains(err.Error(), "migration 17 creates what the database already has") || !strings.Contains(err.Error(), want) {
		t.Fatalf("migrate up after force 16 = %v; want the way out, %q", err, want)
	}
	if err := mg.Force(int(st.Version)); err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatalf("after following the advice: %v", err)
	}
}
