// Package opstest runs the whole service (internal/app) over a fresh SQLite file with an
// injected clock, behind httptest with every API exchange checked against the OpenAPI
// document, and drives it through the public API: the shared ground of the tests that
// need the assembled service, such as the operator surfaces' (the metrics and the admin
// console, which check what they show against what the API did), the SDK's and the
// example worker's. internal/apitest is the lighter harness of the API packages' own
// tests, which cannot import internal/app.
package opstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// Stack is one running service.
type Stack struct {
	App   *app.App
	DB    *sqldb.DB
	Keys  *tenancy.Store
	Clock *dbtest.Clock
	URL   string
	srv   *httptest.Server
}

// Epoch is where every stack's clock starts.
var Epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// New starts a service over a fresh SQLite file whose clock stands still at Epoch until
// Advance.
func New(t testing.TB, cfg app.Config) *Stack { return NewAt(t, Epoch, cfg) }

// NewAt is New with the clock standing at epoch: time.Now() for tests whose clients measure
// leases against their own clock. A nil cfg.Logger discards the log; a zero
// cfg.PurgeInterval turns retention's job off.
func NewAt(t testing.TB, epoch time.Time, cfg app.Config) *Stack {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if cfg.PurgeInterval == 0 {
		cfg.PurgeInterval = -1
	}
	a := app.New(db, cfg)
	// Every API exchange is checked against the served OpenAPI document (the console's
	// pages are not part of it).
	srv := httptest.NewServer(apitest.Checked(t, a.Server))
	t.Cleanup(srv.Close)
	return &Stack{App: a, DB: db, Keys: tenancy.NewStore(db), Clock: clock, URL: srv.URL, srv: srv}
}

// Tenant is a fresh tenant with an admin and a runtime key, a project p1, and an active
// release rel-1 1.0 to claim with.
type Tenant struct {
	s       *Stack
	t       testing.TB
	ID      string
	Admin   string
	Runtime string
}

// NewTenant makes a fresh tenant.
func (s *Stack) NewTenant(t testing.TB) *Tenant {
	t.Helper()
	id := dbtest.NewTenant(t, s.DB)
	tn := &Tenant{s: s, t: t, ID: id, Admin: s.key(t, id, tenancy.RoleAdmin), Runtime: s.key(t, id, tenancy.RoleRuntime)}
	tn.Must(http.StatusCreated, "PUT", "/v1/projects/p1", tn.Admin, map[string]any{})
	refs := []byte(`["oci://agents/reviewer@sha256:abc"]`)
	canon, err := releases.Canonicalize(refs)
	if err != nil {
		t.Fatal(err)
	}
	tn.Must(http.StatusCreated, "PUT", "/v1/releases/rel-"+id+"/adapters/1.0", tn.Runtime,
		map[string]any{"manifestHash": releases.ManifestHash(canon), "contentRefs": json.RawMessage(refs), "state": "active"})
	return tn
}

func (s *Stack) key(t testing.TB, tenant, role string) string {
	t.Helper()
	tok, _, err := s.Keys.CreateKey(context.Background(), tenant, role)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return tok
}

// Response is an API answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode reads the body as JSON into v.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Do sends one API request with key (body marshalled as JSON when not nil).
func (tn *Tenant) Do(method, path, key string, body any, header ...string) Response {
	tn.t.Helper()
	return tn.s.Do(tn.t, method, path, key, body, header...)
}

// Do sends one API request with key; header holds name, value pairs.
func (s *Stack) Do(t testing.TB, method, path, key string, body any, header ...string) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Must is Do that fails the test unless the status is want.
func (tn *Tenant) Must(want int, method, path, key string, body any, header ...string) Response {
	tn.t.Helper()
	r := tn.Do(method, path, key, body, header...)
	if r.Status != want {
		tn.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Enqueue queues a run of band on subject in p1.
func (tn *Tenant) Enqueue(subject, band string) api.Run {
	tn.t.Helper()
	var r api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{
		"subject": subject, "kind": "review", "projectId": "p1", "agentId": "agent-1",
		"stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "band": band,
	}).Decode(tn.t, &r)
	return r
}

// Claimed is a claim's answer.
type Claimed struct{ api.Claim }

// Claim claims with a lease of leaseSeconds; ok false on a 204 (nothing, or a budget
// hold: then held is true).
func (tn *Tenant) Claim(leaseSeconds int, extra map[string]any) (cl Claimed, ok, held bool) {
	tn.t.Helper()
	body := map[string]any{"holderId": "h1", "releaseId": "rel-" + tn.ID, "adapterVersion": "1.0",
		"modelProfileId": "m1", "leaseSeconds": leaseSeconds}
	for k, v := range extra {
		body[k] = v
	}
	r := tn.Do("POST", "/v1/runs/claim", tn.Runtime, body)
	switch r.Status {
	case http.StatusOK:
		r.Decode(tn.t, &cl)
		return cl, true, false
	case http.StatusNoContent:
		return Claimed{}, false, r.Header.Get("Retry-After") != ""
	}
	tn.t.Fatalf("claim: status %d: %s", r.Status, r.Body)
	return
}

// Path formats an attempt path.
func (c Claimed) Path(suffix string) string {
	return fmt.Sprintf("/v1/attempts/%s%s", c.Attempt.AttemptID, suffix)
}

// Problem reads a problem's code.
func (r Response) Problem(t testing.TB) string {
	t.Helper()
	var p api.Problem
	r.Decode(t, &p)
	return string(p.Code)
}
