package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// stack is the whole service over a fresh SQLite file that keeps its own clock, served by
// httptest.
type stack struct {
	st   *apitest.Stack
	app  *app.App
	db   *sqldb.DB
	keys *tenancy.Store
	srv  *httptest.Server
}

func newStack(t *testing.T, cfg app.Config) *stack {
	t.Helper()
	return served(apitest.New(t, apitest.Config{DB: dbtest.SQLite().Open(t, dbtest.Options{}), App: cfg, Serve: true}))
}

func served(st *apitest.Stack) *stack {
	return &stack{st: st, app: st.App, db: st.DB, keys: st.Keys, srv: st.HTTP}
}

// replica is a second service over the same database, as another replica would be.
func (s *stack) replica(t *testing.T) *stack {
	t.Helper()
	return served(s.st.Replica(t, apitest.Config{Serve: true}))
}

// key creates a key for tenant with role and returns its secret form.
func (s *stack) key(t *testing.T, tenant, role string) string {
	t.Helper()
	token, _, err := s.keys.CreateKey(context.Background(), tenant, role)
	if err != nil {
		t.Fatalf("create %s key for %s: %v", role, tenant, err)
	}
	return token
}

// tenantKeys makes a fresh tenant with one admin and one runtime key.
func (s *stack) tenantKeys(t *testing.T) (tenant, admin, runtime string) {
	t.Helper()
	tenant = dbtest.NewTenant(t, s.db)
	return tenant, s.key(t, tenant, tenancy.RoleAdmin), s.key(t, tenant, tenancy.RoleRuntime)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

type req struct {
	method, path, key, body string
	header                  map[string]string
	// chunked sends the body without Content-Length.
	chunked bool
}

func (s *stack) do(t *testing.T, r req) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, r.method, s.srv.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.chunked && body != nil {
		// A reader of unknown length makes the client use chunked transfer encoding.
		hr.Body = io.NopCloser(body)
		hr.ContentLength = -1
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := s.srv.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// problem is the decoded RFC 9457 body.
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Code     string `json:"code"`
	Instance string `json:"instance"`
	Errors   []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

// leakMarkers are fragments no answer may carry: SQL, driver names, stack traces.
var leakMarkers = []string{
	"SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "sqlite", "SQLITE", "sql:", "sqlx",
	"constraint failed", "mssql", "goroutine ", "panic", ".go:",
}

// wantProblem checks r is the problem document of code with status, and returns it.
func wantProblem(t *testing.T, r response, status int, code string) problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json; body %s", ct, r.body)
	}
	var p problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem does not decode: %v; body %s", err, r.body)
	}
	if p.Code != code || p.Status != status || p.Title == "" || p.Type != "urn:ledger:problem:"+code {
		t.Fatalf("problem %+v, want code %s status %d with a type and title", p, code, status)
	}
	if p.Title != http.StatusText(status) {
		t.Fatalf("title %q, want %q", p.Title, http.StatusText(status))
	}
	if id := r.header.Get("X-Request-Id"); id == "" || p.Instance != id {
		t.Fatalf("instance %q does not name the request id %q", p.Instance, id)
	}
	for _, m := range leakMarkers {
		if strings.Contains(string(r.body), m) {
			t.Fatalf("problem leaks %q: %s", m, r.body)
		}
	}
	return p
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %T: %v; body %s", v, err, r.body)
	}
	return v
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}
