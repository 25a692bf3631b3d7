package decisions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// stack is the real HTTP stack over a fresh SQLite file with an injected clock, wired as
// internal/app does, plus the decision routes and hooks.
type stack struct {
	db    *sqldb.DB
	clock *dbtest.Clock
	svc   *runs.Service
	store *decisions.Store
	keys  *tenancy.Store
	srv   *web.Server
}

func newStack(t testing.TB) *stack {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	keys := tenancy.NewStore(db)
	s := web.New(web.Config{Logger: quiet()})
	s.SetAuth(tenancy.NewAuthenticator(keys).Require)
	svc := runs.NewService(db, runs.DefaultConfig(), quiet())
	svc.AddHooks(decisions.Hooks())
	store := decisions.NewStore(db, svc)
	projects.Routes(s, projects.NewStore(db))
	runs.Routes(s, svc)
	decisions.Routes(s, store)
	return &stack{db: db, clock: clock, svc: svc, store: store, keys: keys, srv: s}
}

// client is one tenant seen through its keys.
type client struct {
	tenant, admin, runtime string
	adminKeyID             string
}

func (s *stack) client(t testing.TB) client {
	t.Helper()
	tenant := dbtest.NewTenant(t, s.db)
	admin, k, err := s.keys.CreateKey(context.Background(), tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtime, _, err := s.keys.CreateKey(context.Background(), tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	c := client{tenant: tenant, admin: admin, runtime: runtime, adminKeyID: k.KeyID}
	s.want(t, s.do(t, http.MethodPut, "/v1/projects/p1", admin, `{}`, nil), http.StatusCreated, "")
	return c
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) do(t testing.TB, method, path, key, body string, header map[string]string) response {
	t.Helper()
	return s.doBytes(t, method, path, key, []byte(body), header)
}

func (s *stack) doBytes(t testing.TB, method, path, key string, body []byte, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.srv.Echo.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// want checks the status and, for a problem, its code.
func (s *stack) want(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if code == "" {
		return
	}
	var p struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Code != code || p.Status != status {
		t.Fatalf("problem %s, want code %s (%v)", r.body, code, err)
	}
}

func decode[T any](t testing.TB, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %T: %v; body %s", v, err, r.body)
	}
	return v
}

// wireClaim is the part of a claim's answer the tests use.
type wireClaim struct {
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

// claim enqueues a run on subject over HTTP and claims it.
func (s *stack) claim(t testing.TB, c client, subject string) wireClaim {
	t.Helper()
	body := `{"subject":` + strconv.Quote(subject) + `,"kind":"review","projectId":"p1","agentId":"a",` +
		`"stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"}`
	s.want(t, s.do(t, http.MethodPost, "/v1/runs", c.runtime, body, nil), http.StatusCreated, "")
	r := s.do(t, http.MethodPost, "/v1/runs/claim", c.runtime,
		`{"holderId":"h","releaseId":"rel","adapterVersion":"1","modelProfileId":"m"}`, nil)
	s.want(t, r, http.StatusOK, "")
	return decode[wireClaim](t, r)
}

// decisionCount is how many decisions tenant has.
func (s *stack) decisionCount(t testing.TB, tenant string) int {
	t.Helper()
	var n int
	err := s.db.Read(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(context.Background(), &n, tx.Rebind(`SELECT COUNT(*) FROM DecisionRequests WHERE TenantId = ?`), tenant)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
