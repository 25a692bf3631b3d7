package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
	sqlitemig "github.com/ledger-dev/ledger/migrations/sqlite"
)

// migrationsWith is the embedded SQLite migrations without the files of version drop (0:
// none) and with extra files added: the migrations of another build of the binary.
func migrationsWith(t *testing.T, drop uint, extra map[string]string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	names, err := fs.Glob(sqlitemig.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if drop > 0 && n[:6] == fmt.Sprintf("%06d", drop) {
			continue
		}
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

// openAs opens path as a binary built with migs (nil: this binary's own) and, when up is
// set, migrates it as that binary's `migrate up` would.
func openAs(t *testing.T, path string, migs fs.FS, up bool) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path, Migrations: migs,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if up {
		mg, err := migrate.New(db)
		if err != nil {
			t.Fatal(err)
		}
		defer mg.Close()
		if err := mg.Up(); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestOlderBinaryServesAdditiveNewerSchema is issue 30 item 8: a rolling deploy migrates
// first and then replaces replicas one by one, so a replica of the previous build serves a
// schema one migration newer than its own. It keeps serving (/readyz 200, requests
// answered) while every newer migration is additive, and refuses (503) once one is
// breaking, which Servable names with what to deploy.
func TestOlderBinaryServesAdditiveNewerSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// This binary, built without its newest migration, against a database this binary
	// migrated: the old replica of the deploy that adds that migration.
	all, err := migrate.ReadMigrations(sqlitemig.FS)
	if err != nil {
		t.Fatal(err)
	}
	newest := all[len(all)-1]
	path := filepath.Join(dir, "deploy.db")
	openAs(t, path, nil, true).Close()
	old := openAs(t, path, migrationsWith(t, newest.Version, nil), false)
	s := served(apitest.New(t, apitest.Config{DB: old, Serve: true}))
	if newest.Kind == migrate.Additive {
		wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusOK)
		tenant := dbtest.NewTenant(t, old)
		admin, runtime := s.key(t, tenant, tenancy.RoleAdmin), s.key(t, tenant, tenancy.RoleRuntime)
		wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/p1", key: admin, body: `{}`}), http.StatusCreated)
		wantStatus(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime,
			body: fmt.Sprintf(`{"subject":"s","kind":"k","projectId":"p1","agentId":"a","stepId":%q,"snapshotId":%q}`, uuid.NewString(), uuid.NewString())}),
			http.StatusCreated)
	} else {
		wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusServiceUnavailable, "database_unavailable")
	}

	// This binary against a database a newer build migrated, by one additive migration and
	// then by one breaking one.
	path = filepath.Join(dir, "rolling.db")
	additive := map[string]string{
		"000900_rolling_probe.up.sql":   "-- migration: additive\nCREATE TABLE RollingProbe (Id INTEGER NOT NULL PRIMARY KEY);\n",
		"000900_rolling_probe.down.sql": "DROP TABLE RollingProbe;\n",
	}
	openAs(t, path, migrationsWith(t, 0, additive), true).Close()
	db := openAs(t, path, nil, false)
	s = served(apitest.New(t, apitest.Config{DB: db, Serve: true}))
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusOK)
	st, newer, err := migrate.Servable(context.Background(), db)
	if err != nil || st.Version != 900 || len(newer) != 1 || newer[0].Version != 900 || newer[0].Kind != migrate.Additive {
		t.Fatalf("Servable over an additive newer migration = %+v, %+v, %v", st, newer, err)
	}

	breaking := map[string]string{
		"000901_rolling_contract.up.sql":   "-- migration: breaking\n-- Drops RollingProbe's Id, which older binaries read.\nCREATE TABLE RollingContract (Id INTEGER NOT NULL PRIMARY KEY);\n",
		"000901_rolling_contract.down.sql": "DROP TABLE RollingContract;\n",
	}
	for n, text := range additive {
		breaking[n] = text
	}
	openAs(t, path, migrationsWith(t, 0, breaking), true).Close()
	wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusServiceUnavailable, "database_unavailable")
	err = app.Ready(context.Background(), db)
	var se *migrate.SchemaError
	if !errors.As(err, &se) || se.Breaking == nil || se.Breaking.Version != 901 || se.Breaking.Reason != "Drops RollingProbe's Id, which older binaries read." {
		t.Fatalf("Ready over a breaking newer migration = %v; want a SchemaError naming 901 and why", err)
	}
	for _, want := range []string{"migration 901 (rolling_contract)", "breaking", "deploy a binary whose schema version (`ledger --version`) is at least 901"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
}
