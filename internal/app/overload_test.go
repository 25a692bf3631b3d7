package app_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// TestDatabaseLockedIsUnavailableThenRecovers holds SQLite's write lock from another
// connection past the busy timeout: writes answer 503 database_unavailable with
// Retry-After, /readyz says not ready, and both recover without a restart once the lock
// is let go.
func TestDatabaseLockedIsUnavailableThenRecovers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, BusyTimeout: 200 * time.Millisecond})
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
	admin := s.key(t, "locked", tenancy.RoleAdmin)

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r := s.do(t, req{method: "PUT", path: "/v1/projects/p1", key: admin, body: `{}`})
	wantProblem(t, r, 503, "database_unavailable")
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After %q, want a positive number of seconds", r.header.Get("Retry-After"))
	}
	if r := s.do(t, req{method: "GET", path: "/readyz"}); r.status != 503 {
		t.Fatalf("/readyz while locked: %d, want 503", r.status)
	}
	// Reads still work: WAL readers do not wait for the writer.
	wantStatus(t, s.do(t, req{method: "GET", path: "/v1/projects", key: admin}), 200)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s.do(t, req{method: "GET", path: "/readyz"}), 200)
	wantStatus(t, s.do(t, req{method: "PUT", path: "/v1/projects/p1", key: admin, body: `{}`}), 201)
}

func TestTenantRateLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{Limits: admission.Limits{Rate: 1, Burst: 2}})
	_, admin, _ := s.tenantKeys(t)
	_, otherAdmin, _ := s.tenantKeys(t)
	for range 2 {
		wantStatus(t, s.do(t, req{method: "GET", path: "/v1/projects", key: admin}), 200)
	}
	r := s.do(t, req{method: "GET", path: "/v1/projects", key: admin})
	wantProblem(t, r, 429, "rate_limited")
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Another tenant has its own budget.
	wantStatus(t, s.do(t, req{method: "GET", path: "/v1/projects", key: otherAdmin}), 200)
	// Health routes are never limited.
	wantStatus(t, s.do(t, req{method: "GET", path: "/healthz"}), 200)
}

func TestInFlightCap(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{Limits: admission.Limits{ReplicaInFlight: 1}})
	_, _, runtime := s.tenantKeys(t)
	refs := `["bench://x"]`
	sum := sha256.Sum256([]byte(refs))
	wantStatus(t, s.do(t, req{method: "PUT", path: "/v1/releases/r/adapters/1", key: runtime,
		body: `{"manifestHash":"` + hex.EncodeToString(sum[:]) + `","contentRefs":` + refs + `,"state":"active"}`}), 201)
	// A long-polling claim holds the only slot while it waits. The probing GETs can take the
	// slot just as the claim arrives, refusing the claim instead: then claim again.
	refused := false
	for try := 0; try < 5 && !refused; try++ {
		claimDone := make(chan int, 1)
		go func() {
			claimDone <- s.do(t, req{method: "POST", path: "/v1/runs/claim", key: runtime,
				body: `{"holderId":"h","releaseId":"r","adapterVersion":"1","modelProfileId":"m","waitSeconds":5}`}).status
		}()
		var claimStatus int
	probe:
		for !refused {
			select {
			case claimStatus = <-claimDone:
				break probe
			default:
			}
			r := s.do(t, req{method: "GET", path: "/v1/projects", key: runtime})
			if r.status == 429 {
				wantProblem(t, r, 429, "rate_limited")
				refused = true
			}
		}
		if refused {
			claimStatus = <-claimDone
		}
		if !refused && claimStatus != 429 {
			t.Fatalf("no request was refused while the claim held the only slot (claim answered %d)", claimStatus)
		}
	}
	if !refused {
		t.Fatal("no request was refused while the claim held the only slot")
	}
	wantStatus(t, s.do(t, req{method: "GET", path: "/v1/projects", key: runtime}), 200)
}

// TestReadPastItsDeadlineIsCancelled: a GET whose statement is still running when the read
// deadline passes has its statement's context cancelled and answers 503
// database_unavailable with Retry-After; the next read is served.
func TestReadPastItsDeadlineIsCancelled(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{Limits: admission.Limits{ReadTimeout: 300 * time.Millisecond}})
	_, admin, _ := s.tenantKeys(t)
	var stuck atomic.Bool
	stuck.Store(true)
	var saw atomic.Value
	s.db.SetStatementHook(func(ctx context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		if !stuck.Load() || !strings.Contains(st.Query, "FROM Projects") {
			return nil
		}
		<-ctx.Done()
		saw.Store(ctx.Err())
		return ctx.Err()
	})
	r := s.do(t, req{method: http.MethodGet, path: "/v1/projects", key: admin})
	wantProblem(t, r, http.StatusServiceUnavailable, "database_unavailable")
	if err, _ := saw.Load().(error); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the statement saw %v, want the deadline", err)
	}
	stuck.Store(false)
	if r := s.do(t, req{method: http.MethodGet, path: "/v1/projects", key: admin}); r.status != http.StatusOK {
		t.Fatalf("after the deadline a read answered %d", r.status)
	}
}
