package migrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

func openFile(t *testing.T, path string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tables(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	var names []string
	if err := db.Raw().Select(&names, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`); err != nil {
		t.Fatal(err)
	}
	return names
}

func wantState(t *testing.T, db *sqldb.DB, mg *migrate.Migrator, version uint) {
	t.Helper()
	st, err := mg.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != version || st.Dirty || st.Latest == 0 {
		t.Fatalf("migrator state %+v, want version %d, clean", st, version)
	}
	// SchemaState reads the same row without the lock.
	if st2, err := migrate.ReadState(context.Background(), db); err != nil || st2 != st {
		t.Fatalf("SchemaState %+v (%v) disagrees with the migrator's %+v", st2, err, st)
	}
	if st.Current() != (version == st.Latest) {
		t.Fatalf("Current() = %v for %+v", st.Current(), st)
	}
}

func TestMigratorUpDownAllUp(t *testing.T) {
	t.Parallel()
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()

	wantState(t, db, mg, 0)
	st, _ := mg.State()
	latest := st.Latest
	if err := mg.Up(); err != nil {
		t.Fatalf("up: %v", err)
	}
	wantState(t, db, mg, latest)
	full := tables(t, db)
	for _, want := range []string{"Tenants", "ApiKeys", "Projects", "RowVersionCounter"} {
		if !slices.Contains(full, want) {
			t.Fatalf("after up, table %s is missing: %v", want, full)
		}
	}
	if err := mg.Up(); err != nil {
		t.Fatalf("up with nothing to do: %v", err)
	}

	if err := mg.Down(0); err == nil {
		t.Fatal("Down(0) was accepted")
	}
	if err := mg.Down(1); err != nil {
		t.Fatalf("down 1: %v", err)
	}
	wantState(t, db, mg, latest-1)
	if err := mg.Down(int(latest - 1)); err != nil {
		t.Fatalf("down to nothing: %v", err)
	}
	wantState(t, db, mg, 0)
	if left := tables(t, db); !slices.Equal(left, []string{"schema_migrations"}) {
		t.Fatalf("after down all, tables remain: %v", left)
	}

	if err := mg.Up(); err != nil {
		t.Fatalf("up again: %v", err)
	}
	wantState(t, db, mg, latest)
	if again := tables(t, db); !slices.Equal(again, full) {
		t.Fatalf("up after down all made %v, the first up %v", again, full)
	}

	if err := mg.Force(int(latest - 1)); err != nil {
		t.Fatal(err)
	}
	wantState(t, db, mg, latest-1)
}

// TestMigratorsOnOneFileSerialise opens the same file twice, as two processes would, and
// checks that the second migrator waits for the first to close.
func TestMigratorsOnOneFileSerialise(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db1, db2 := openFile(t, path), openFile(t, path)

	first, err := migrate.New(db1)
	if err != nil {
		t.Fatal(err)
	}
	// Whoever holds the lock file, nobody else can take it now.
	f, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the migrator holds no lock file beside the database: %v", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("the lock file is not locked while a migrator is open (flock: %v)", err)
	}

	var released atomic.Bool
	type result struct {
		mg                *migrate.Migrator
		err               error
		sawFirstReleased  bool
		sawFirstMigration bool
	}
	got := make(chan result, 1)
	go func() {
		mg, err := migrate.New(db2)
		r := result{mg: mg, err: err, sawFirstReleased: released.Load()}
		if err == nil {
			st, _ := mg.State()
			r.sawFirstMigration = st.Current()
		}
		got <- r
	}()

	// The first migrator does its work while the second is (or soon will be) waiting.
	if err := first.Up(); err != nil {
		t.Fatal(err)
	}
	// Give the goroutine time to reach the lock: not an assertion, since the order it
	// observes (released before acquired) is what is checked.
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("the second migrator got the lock while the first held it (err %v)", r.err)
	default:
	}
	released.Store(true)
	first.Close()

	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.mg.Close()
		if !r.sawFirstReleased || !r.sawFirstMigration {
			t.Fatalf("second migrator: saw release %v, saw the first's migration %v", r.sawFirstReleased, r.sawFirstMigration)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second migrator did not get the lock after the first closed")
	}
}

// TestFailedSQLiteMigrationLeavesTheVersionBefore: a SQLite migration commits with its
// version row, so one that fails (as one killed part way) leaves the version before it,
// clean, instead of a dirty version whose migration SQLite in fact rolled back.
func TestFailedSQLiteMigrationLeavesTheVersionBefore(t *testing.T) {
	t.Parallel()
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	// Migration 5 creates TaskRunLocks: a table of that name already there makes it fail.
	if _, err := db.Raw().Exec(`CREATE TABLE TaskRunLocks (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err == nil {
		t.Fatal("up over a conflicting table succeeded")
	}
	wantState(t, db, mg, 4)
	if _, err := db.Raw().Exec(`DROP TABLE TaskRunLocks`); err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatalf("up after the conflict was removed: %v", err)
	}
	st, _ := mg.State()
	wantState(t, db, mg, st.Latest)
	// Down commits with its version row too.
	if err := mg.Down(2); err != nil {
		t.Fatal(err)
	}
	wantState(t, db, mg, st.Latest-2)
}

// TestDirtyVersionNamesTheVersionToForce: a dirty version (left by an older binary on
// SQLite, or by a failed migration on SQL Server) is refused with the version to force and
// why, never a bare "fix and force version".
func TestDirtyVersionNamesTheVersionToForce(t *testing.T) {
	t.Parallel()
	sqlite := migrate.SchemaState{Version: 5, Latest: 15, Dirty: true, Dialect: "sqlite"}.DirtyFix()
	if !strings.Contains(sqlite, "rolled migration 5 back") || !strings.Contains(sqlite, "`ledger migrate force 4`") {
		t.Errorf("SQLite advice %q does not say the migration rolled back and to force 4", sqlite)
	}
	mssql := migrate.SchemaState{Version: 5, Latest: 15, Dirty: true, Dialect: "sqlserver"}.DirtyFix()
	for _, want := range []string{"part way", "`ledger migrate force 4`", "`ledger migrate force 5`", "nothing applied", "by hand"} {
		if !strings.Contains(mssql, want) {
			t.Errorf("SQL Server advice %q does not say %q", mssql, want)
		}
	}

	// A SQLite file an older binary left dirty at 5: Up refuses with the version to force.
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	if err := mg.Down(int(latestOf(t, mg)) - 4); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Raw().Exec(`UPDATE schema_migrations SET version = 5, dirty = 1`); err != nil {
		t.Fatal(err)
	}
	err = mg.Up()
	if err == nil || !strings.Contains(err.Error(), "schema version 5 is dirty") || !strings.Contains(err.Error(), "force 4") {
		t.Fatalf("up on a dirty version: %v", err)
	}
	if st, _ := migrate.ReadState(context.Background(), db); !st.Dirty || st.Version != 5 || st.Dialect != "sqlite" {
		t.Fatalf("SchemaState %+v", st)
	}
}

func latestOf(t *testing.T, mg *migrate.Migrator) uint {
	t.Helper()
	st, err := mg.State()
	if err != nil {
		t.Fatal(err)
	}
	return st.Latest
}

// TestIndexMigrationsRunOverHandMadeIndexes: migrations 16 and 18 say an operator may build
// their indexes by hand first (ONLINE, off-peak) with the same names; each build is guarded
// (IF NOT EXISTS on SQLite, sys.indexes on SQL Server), so the migration then runs instead
// of failing (SQLite: "index already exists"; SQL Server: 1913) and leaving the version
// dirty. A second run of each (after `migrate force` to the version before it) takes the
// same path.
func TestIndexMigrationsRunOverHandMadeIndexes(t *testing.T) {
	t.Parallel()
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Goto(15); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		`CREATE INDEX IX_Runs_Parent_Subject ON Runs (TenantId, ParentRunId, Subject)`,
		`CREATE INDEX IX_Calls_Tenant_Started ON CallRecords (TenantId, StartedAt)`,
	} {
		if _, err := db.Raw().Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	if err := mg.Goto(18); err != nil {
		t.Fatalf("migrations 16 to 18 over indexes made by hand: %v", err)
	}
	// Each again, as after a failure part way and `migrate force` to the version before.
	for _, v := range []uint{16, 18} {
		if err := mg.Force(int(v) - 1); err != nil {
			t.Fatal(err)
		}
		if err := mg.Goto(v); err != nil {
			t.Fatalf("migration %d run a second time: %v", v, err)
		}
	}
	st, err := mg.State()
	if err != nil || st.Version != 18 || st.Dirty {
		t.Fatalf("state %+v (%v); want 18, clean", st, err)
	}
	var n int
	if err := db.Raw().Get(&n, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN
		('IX_Runs_Parent_Subject', 'IX_Runs_Tenant_Ended', 'IX_Attempts_Tenant_State_Ended', 'IX_Calls_Tenant_Started')`); err != nil || n != 4 {
		t.Fatalf("%d of the 4 indexes of migrations 16 and 18 exist (%v)", n, err)
	}
}

// third is a dialect with no migration driver registered: SQLite's behaviour under a name of
// its own.
type third struct{ sqldb.Dialect }

func (third) Name() string { return "third" }

// TestMigratorRefusesADialectWithoutADriver: a dialect added without its golang-migrate
// driver is refused by name, not migrated with another dialect's.
func TestMigratorRefusesADialectWithoutADriver(t *testing.T) {
	t.Parallel()
	db := openFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	db.Dialect = third{db.Dialect}
	mg, err := migrate.New(db)
	if err == nil {
		mg.Close()
		t.Fatal("a dialect with no driver was migrated")
	}
	if !strings.Contains(err.Error(), `"third"`) {
		t.Fatalf("error %q does not name the dialect", err)
	}
}
