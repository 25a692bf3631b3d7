// Package apitest is the test harness of everything that drives the service over HTTP: the
// whole service as `ledger serve` assembles it (internal/app: every route, hook and
// middleware) over a fresh SQLite file with an injected clock, every exchange checked against
// the OpenAPI document, and the request, tenant and problem-document helpers; and Env, the
// store-level world of the API packages' own tests. It is an ordinary package so that
// several packages' tests can import it; only tests use it. A package app wires may import
// it only from its external tests (package x_test).
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Epoch is where a stack's clock starts unless Config.Epoch says otherwise.
var Epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// Config says what a test varies of the service; the rest is as `ledger serve` builds it.
type Config struct {
	// Epoch is where the injected clock starts and stands until advanced (zero: Epoch).
	Epoch time.Time
	// App is the service's configuration (body and tenant limits, run-lease settings,
	// metrics, console). A nil Logger discards the log; a zero PurgeInterval turns
	// retention's job off.
	App app.Config
	// Serve puts the stack behind a real listener (httptest.Server, its address in URL);
	// otherwise requests are served by the handler in process.
	Serve bool
	// DB, when set, is the open and migrated database to serve instead of a fresh SQLite
	// file: a file the test controls (its clock is then the database's own, and Clock is
	// nil).
	DB *sqldb.DB
}

// Stack is the whole service. Faults are injected through its parts: statements through
// DB.SetStatementHook, run-lease events through Svc.AddHooks.
type Stack struct {
	App    *app.App
	DB     *sqldb.DB
	Clock  *dbtest.Clock
	Svc    *runs.Service
	Server *web.Server
	Keys   *tenancy.Store
	// HTTP is the listener and URL its address when Config.Serve is set, else nil and "".
	HTTP *httptest.Server
	URL  string
	// releases are the active releases of the tenants Tenant made, by runtime key.
	releases sync.Map
	// Handler is the server's handler checked against its OpenAPI document (Checked):
	// every request of the stack goes through it.
	Handler http.Handler
}

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// New builds the service (app.New) over a fresh SQLite file whose clock stands at cfg.Epoch.
func New(t testing.TB, cfg Config) *Stack {
	t.Helper()
	var clock *dbtest.Clock
	db := cfg.DB
	if db == nil {
		epoch := cfg.Epoch
		if epoch.IsZero() {
			epoch = Epoch
		}
		clock = dbtest.NewClock(epoch)
		db = dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	}
	st := serve(t, db, cfg)
	st.Clock = clock
	return st
}

// Replica is a second service over the same database and clock, as another replica of the
// deployment would be.
func (s *Stack) Replica(t testing.TB, cfg Config) *Stack {
	t.Helper()
	r := serve(t, s.DB, cfg)
	r.Clock = s.Clock
	return r
}

func serve(t testing.TB, db *sqldb.DB, cfg Config) *Stack {
	t.Helper()
	ac := cfg.App
	if ac.Logger == nil {
		ac.Logger = Quiet()
	}
	if ac.PurgeInterval == 0 {
		ac.PurgeInterval = -1
	}
	a := app.New(db, ac)
	st := &Stack{App: a, DB: db, Svc: a.Runs, Server: a.Server, Keys: a.Keys}
	// Every API exchange is checked against the served OpenAPI document (the console's
	// pages are not part of it).
	st.Handler = Checked(t, a.Server)
	if cfg.Serve {
		st.HTTP = httptest.NewServer(st.Handler)
		st.URL = st.HTTP.URL
		t.Cleanup(st.HTTP.Close)
	}
	return st
}

// Tenant is a fresh tenant seen through its keys.
type Tenant struct {
	ID, Admin, Runtime string
	AdminKeyID         string
	// Release is the tenant's active release (version 1.0) its claims name.
	Release string

	s *Stack
	t testing.TB
}

// Tenant makes a fresh tenant with an admin and a runtime key, a project p1 and an active
// release rel-<tenant id> 1.0 (the service admits a claim only under an active release of
// the caller's tenant, and release ids are one namespace across tenants).
func (s *Stack) Tenant(t testing.TB) Tenant {
	t.Helper()
	return *s.NewTenant(t)
}

// NewTenant is Tenant as a pointer, whose methods send its test's requests.
func (s *Stack) NewTenant(t testing.TB) *Tenant {
	t.Helper()
	tenant := dbtest.NewTenant(t, s.DB)
	ctx := context.Background()
	admin, k, err := s.Keys.CreateKey(ctx, tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtime, _, err := s.Keys.CreateKey(ctx, tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	WantStatus(t, s.Do(t, http.MethodPut, "/v1/projects/p1", admin, `{}`, nil), http.StatusCreated)
	tn := &Tenant{ID: tenant, Admin: admin, Runtime: runtime, AdminKeyID: k.KeyID, Release: "rel-" + tenant, s: s, t: t}
	s.ActivateRelease(t, runtime, tn.Release, "1.0")
	s.releases.Store(runtime, tn.Release)
	return tn
}

// ActivateRelease registers version of release as active with the runtime key.
func (s *Stack) ActivateRelease(t testing.TB, runtime, release, version string) {
	t.Helper()
	refs := []byte(`["oci://agents/reviewer@sha256:abc"]`)
	canon, err := releases.Canonicalize(refs)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"manifestHash": releases.ManifestHash(canon), "contentRefs": json.RawMessage(refs), "state": "active"})
	if err != nil {
		t.Fatal(err)
	}
	WantStatus(t, s.DoBytes(t, http.MethodPut, "/v1/releases/"+release+"/adapters/"+version, runtime, body, nil), http.StatusCreated)
}

// TenantKeys is Tenant as its id, admin key and runtime key.
func (s *Stack) TenantKeys(t testing.TB) (tenant, admin, runtime string) {
	t.Helper()
	c := s.Tenant(t)
	return c.ID, c.Admin, c.Runtime
}

// Response is an answer of the stack.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request with key as its bearer token; a body is sent as JSON.
func (s *Stack) Do(t testing.TB, method, path, key, body string, header map[string]string) Response {
	t.Helper()
	return s.DoBytes(t, method, path, key, []byte(body), header)
}

// DoBytes is Do with a body of any bytes.
func (s *Stack) DoBytes(t testing.TB, method, path, key string, body []byte, header map[string]string) Response {
	t.Helper()
	if s.HTTP != nil {
		return s.doHTTP(t, method, path, key, body, header)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	setHeaders(req, key, len(body) > 0, header)
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	return Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func (s *Stack) doHTTP(t testing.TB, method, path, key string, body []byte, header map[string]string) Response {
	t.Helper()
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.HTTP.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, key, len(body) > 0, header)
	res, err := s.HTTP.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func setHeaders(req *http.Request, key string, hasBody bool, header map[string]string) {
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
}

// WireClaim is the part of a claim's answer the tests use.
type WireClaim struct {
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

// Claim posts a claim request body with the runtime key and wants a 200.
func (s *Stack) Claim(t testing.TB, runtime, body string) WireClaim {
	t.Helper()
	r := s.Do(t, http.MethodPost, "/v1/runs/claim", runtime, body, nil)
	WantStatus(t, r, http.StatusOK)
	var cl WireClaim
	Decode(t, r, &cl)
	return cl
}

// WantStatus checks the status.
func WantStatus(t testing.TB, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
}

// Want checks the status and, unless code is empty, the problem code.
func Want(t testing.TB, r Response, status int, code string) {
	t.Helper()
	WantStatus(t, r, status)
	if code == "" {
		return
	}
	var p struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(r.Body, &p); err != nil || p.Code != code || p.Status != status {
		t.Fatalf("problem %s, want code %s (%v)", r.Body, code, err)
	}
}

// Decode unmarshals the body into v.
func Decode(t testing.TB, r Response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// DecodeAs unmarshals the body as a T.
func DecodeAs[T any](t testing.TB, r Response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %T: %v; body %s", v, err, r.Body)
	}
	return v
}

// Problem is a problem document (DESIGN.md section 7a).
type Problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Errors []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

// WantProblem checks r is the problem document of code with status, and that it leaks no
// SQL or source detail.
func WantProblem(t testing.TB, r Response, status int, code string) Problem {
	t.Helper()
	WantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p Problem
	Decode(t, r, &p)
	if p.Code != code || p.Status != status {
		t.Fatalf("problem %+v, want code %s status %d", p, code, status)
	}
	for _, leak := range []string{"SELECT", "INSERT", "sqlite", "constraint", ".go:"} {
		if strings.Contains(string(r.Body), leak) {
			t.Fatalf("problem leaks %q: %s", leak, r.Body)
		}
	}
	return p
}

// WantFields checks a 400 names exactly these fields.
func WantFields(t testing.TB, r Response, fields ...string) {
	t.Helper()
	p := WantProblem(t, r, http.StatusBadRequest, "invalid_request")
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

// Rows is how many rows of table tenant has.
func (s *Stack) Rows(t testing.TB, table, tenant string) int {
	t.Helper()
	var n int
	err := s.DB.Read(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(context.Background(), &n, tx.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE TenantId = ?`), tenant)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Lease is a claim made over HTTP.
type Lease struct {
	RunID     string
	AttemptID string
	Token     int64
}

// Lease enqueues a run on a subject of its own and claims it over HTTP with the runtime key.
func (s *Stack) Lease(t testing.TB, runtime string) Lease {
	t.Helper()
	enq := fmt.Sprintf(`{"subject":"http-%d","kind":"review","projectId":"p1","agentId":"agent-1","stepId":%q,"snapshotId":%q,"maxAttempts":5}`,
		subjects.Add(1), uuid.NewString(), uuid.NewString())
	WantStatus(t, s.Do(t, http.MethodPost, "/v1/runs", runtime, enq, nil), http.StatusCreated)
	return s.ClaimLease(t, runtime)
}

// ClaimLease claims the tenant's next due run over HTTP with the runtime key, under the
// tenant's release.
func (s *Stack) ClaimLease(t testing.TB, runtime string) Lease {
	t.Helper()
	cl := s.Claim(t, runtime, s.ClaimBody(t, runtime))
	return Lease{RunID: cl.Run.RunID, AttemptID: cl.Attempt.AttemptID, Token: cl.Lease.FencingToken}
}

// ClaimBody is the body of a claim under the tenant's release (holder h1, a 60 s lease),
// for a test that sends the claim itself.
func (s *Stack) ClaimBody(t testing.TB, runtime string) string {
	t.Helper()
	release, ok := s.releases.Load(runtime)
	if !ok {
		t.Fatal("ClaimBody: the runtime key is not of a tenant Tenant made")
	}
	return `{"holderId":"h1","releaseId":` + strconv.Quote(release.(string)) + `,"adapterVersion":"1.0","modelProfileId":"m","leaseSeconds":60}`
}
