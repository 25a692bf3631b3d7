package calls_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// stack is the real HTTP stack over a fresh SQLite file, built as internal/app builds it,
// with the call routes added and the clock injected.
type stack struct {
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	server *web.Server
	srv    *httptest.Server
	keys   *tenancy.Store
}

func newStack(t testing.TB, maxBody int64) *stack {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	keys := tenancy.NewStore(db)
	s := web.New(web.Config{MaxBody: maxBody, Logger: log})
	s.SetAuth(tenancy.NewAuthenticator(keys).Require)
	projects.Routes(s, projects.NewStore(db))
	svc := runs.NewService(db, runs.DefaultConfig(), log)
	runs.Routes(s, svc)
	calls.Routes(s, calls.NewStore(db, svc))
	srv := httptest.NewServer(s.Echo)
	t.Cleanup(srv.Close)
	return &stack{db: db, clock: clock, svc: svc, server: s, srv: srv, keys: keys}
}

// tenant makes a fresh tenant with an admin and a runtime key and a project p1.
func (s *stack) tenant(t testing.TB) (tenant, admin, runtime string) {
	t.Helper()
	tenant = dbtest.NewTenant(t, s.db)
	ctx := context.Background()
	admin, _, err := s.keys.CreateKey(ctx, tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtime, _, err = s.keys.CreateKey(ctx, tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s.do(t, http.MethodPut, "/v1/projects/p1", admin, `{}`, nil), http.StatusCreated)
	return tenant, admin, runtime
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) do(t testing.TB, method, path, key, body string, header map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// httpLease is a claim made over HTTP.
type httpLease struct {
	RunID     string
	AttemptID string
	Token     int64
}

// lease enqueues a run and claims it over HTTP with the runtime key.
func (s *stack) lease(t testing.TB, runtime string) httpLease {
	t.Helper()
	enq := fmt.Sprintf(`{"subject":"http-%d","kind":"review","projectId":"p1","agentId":"agent-1","stepId":%q,"snapshotId":%q,"maxAttempts":5}`,
		subjects.Add(1), uuid.NewString(), uuid.NewString())
	wantStatus(t, s.do(t, http.MethodPost, "/v1/runs", runtime, enq, nil), http.StatusCreated)
	return s.claim(t, runtime)
}

func (s *stack) claim(t testing.TB, runtime string) httpLease {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/runs/claim", runtime,
		`{"holderId":"h1","releaseId":"rel-1","adapterVersion":"1.0","modelProfileId":"m","leaseSeconds":60}`, nil)
	wantStatus(t, r, http.StatusOK)
	var cl struct {
		Run struct {
			RunID string `json:"runId"`
		} `json:"run"`
		Attempt struct {
			AttemptID string `json:"attemptId"`
		} `json:"attempt"`
		Lease struct {
			FencingToken int64 `json:"fencingToken"`
		} `json:"lease"`
	}
	decode(t, r, &cl)
	return httpLease{RunID: cl.Run.RunID, AttemptID: cl.Attempt.AttemptID, Token: cl.Lease.FencingToken}
}

func wantStatus(t testing.TB, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

func decode(t testing.TB, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

type problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Errors []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

// wantProblem checks r is the problem document of code with status.
func wantProblem(t testing.TB, r response, status int, code string) problem {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	decode(t, r, &p)
	if p.Code != code || p.Status != status {
		t.Fatalf("problem %+v, want code %s status %d", p, code, status)
	}
	for _, leak := range []string{"SELECT", "INSERT", "sqlite", "constraint", ".go:"} {
		if strings.Contains(string(r.body), leak) {
			t.Fatalf("problem leaks %q: %s", leak, r.body)
		}
	}
	return p
}

// wantFields checks a 400 names exactly these fields.
func wantFields(t testing.TB, r response, fields ...string) {
	t.Helper()
	p := wantProblem(t, r, http.StatusBadRequest, "invalid_request")
	got := map[string]bool{}
	for _, e := range p.Errors {
		got[e.Field] = true
	}
	for _, f := range fields {
		if !got[f] {
			t.Fatalf("field errors %+v do not name %q", p.Errors, f)
		}
	}
	if len(got) != len(fields) {
		t.Fatalf("field errors %+v, want exactly %v", p.Errors, fields)
	}
}
