package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/syncbuf"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// TestDatabaseFileReplacedAnswers503 is issue 17 item 13 over HTTP: once another file is
// renamed over the database while the service runs, an enqueue is 503 database_unavailable
// (it answered 201 into the replaced file before), /readyz is 503, and the refused write is
// nowhere.
func TestDatabaseFileReplacedAnswers503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	migrated := func(p string) *sqldb.DB {
		db, err := sqldb.Open(ctx, sqldb.Config{DSN: p, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		mg, err := migrate.New(db)
		if err != nil {
			t.Fatal(err)
		}
		defer mg.Close()
		if err := mg.Up(); err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := migrated(path)
	s := served(apitest.New(t, apitest.Config{DB: db, Serve: true}))
	tenant := dbtest.NewTenant(t, db)
	admin, runtime := s.key(t, tenant, tenancy.RoleAdmin), s.key(t, tenant, tenancy.RoleRuntime)
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/p1", key: admin, body: `{}`}), http.StatusCreated)
	enqueue := func() response {
		return s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime,
			body: fmt.Sprintf(`{"subject":"s","kind":"k","projectId":"p1","agentId":"a","stepId":%q,"snapshotId":%q}`, uuid.NewString(), uuid.NewString())})
	}
	wantStatus(t, enqueue(), http.StatusCreated)
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusOK)

	other := filepath.Join(dir, "other.db")
	migrated(other).Close()
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, enqueue(), http.StatusServiceUnavailable, "database_unavailable")
	wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusServiceUnavailable, "database_unavailable")
	var runs int
	if err := migrated(path).Raw().GetContext(ctx, &runs, "SELECT COUNT(*) FROM Runs"); err != nil {
		t.Fatal(err)
	}
	// The run accepted before may be there (SQLite applies the WAL left at the path to the
	// new file), the refused one must not.
	if runs > 1 {
		t.Fatalf("the file at the path holds %d runs: the refused enqueue was written", runs)
	}
}

// TestWALDeletedAnswers503 is issue 30 item 4 over HTTP: with the database's -wal file
// deleted under the running service, enqueues were acknowledged (201) with /readyz 200 and
// lost at a crash. Now an enqueue is 503 database_unavailable, /readyz is 503, and the
// cause is logged as an error.
func TestWALDeletedAnswers503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	logs := &syncbuf.Buffer{}
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	mg.Close()
	s := served(apitest.New(t, apitest.Config{DB: db, Serve: true}))
	tenant := dbtest.NewTenant(t, db)
	admin, runtime := s.key(t, tenant, tenancy.RoleAdmin), s.key(t, tenant, tenancy.RoleRuntime)
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/p1", key: admin, body: `{}`}), http.StatusCreated)
	enqueue := func() response {
		return s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime,
			body: fmt.Sprintf(`{"subject":"s","kind":"k","projectId":"p1","agentId":"a","stepId":%q,"snapshotId":%q}`, uuid.NewString(), uuid.NewString())})
	}
	wantStatus(t, enqueue(), http.StatusCreated)
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusOK)

	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, enqueue(), http.StatusServiceUnavailable, "database_unavailable")
	wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusServiceUnavailable, "database_unavailable")
	if !strings.Contains(logs.String(), `"level":"ERROR","msg":"the database's write-ahead log (-wal) was deleted`) {
		t.Fatalf("the cause is not logged as an error:\n%s", logs.String())
	}
}
