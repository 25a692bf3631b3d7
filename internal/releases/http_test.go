package releases_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// stack is the whole service over a fresh SQLite file that keeps its own clock, served in
// process.
type stack struct {
	db   *sqldb.DB
	keys *tenancy.Store
	h    http.Handler
}

func newStack(t testing.TB) *stack {
	t.Helper()
	s := apitest.New(t, apitest.Config{DB: dbtest.SQLite().Open(t, dbtest.Options{})})
	return &stack{db: s.DB, keys: s.Keys, h: s.Handler}
}

// tenantKeys makes a fresh tenant with an admin and a runtime key and an active project p1.
func (s *stack) tenantKeys(t testing.TB) (tenant, admin, runtime string) {
	t.Helper()
	tenant = dbtest.NewTenant(t, s.db)
	var err error
	if admin, _, err = s.keys.CreateKey(context.Background(), tenant, tenancy.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if runtime, _, err = s.keys.CreateKey(context.Background(), tenant, tenancy.RoleRuntime); err != nil {
		t.Fatal(err)
	}
	if r := s.do(t, http.MethodPut, "/v1/projects/p1", admin, `{}`, nil); r.Code != http.StatusCreated {
		t.Fatalf("create project: %d %s", r.Code, r.Body)
	}
	return tenant, admin, runtime
}

func (s *stack) do(t testing.TB, method, path, key, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	return rec
}

type problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Errors []struct {
		Field string `json:"field"`
	} `json:"errors"`
}

func wantProblem(t *testing.T, r *httptest.ResponseRecorder, status int, code string) problem {
	t.Helper()
	var p problem
	if r.Code != status || json.Unmarshal(r.Body.Bytes(), &p) != nil || p.Code != code || p.Status != status {
		t.Fatalf("got %d %s, want %d %s", r.Code, r.Body, status, code)
	}
	if ct := r.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("problem content type %q", ct)
	}
	return p
}

type wireRelease struct {
	ReleaseID      string          `json:"releaseId"`
	AdapterVersion string          `json:"adapterVersion"`
	ManifestHash   string          `json:"manifestHash"`
	ContentRefs    json.RawMessage `json:"contentRefs"`
	State          string          `json:"state"`
	InFlightPolicy string          `json:"inFlightPolicy"`
	VerifiedAt     string          `json:"verifiedAt"`
}

func decode[T any](t testing.TB, r *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return v
}

// putBody is a PUT body for refs with its correct manifest hash.
func putBody(t testing.TB, refs, state, policy string) string {
	t.Helper()
	c, err := releases.Canonicalize([]byte(refs))
	if err != nil {
		t.Fatal(err)
	}
	b := fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":%q`, releases.ManifestHash(c), refs, state)
	if policy != "" {
		b += fmt.Sprintf(`,"inFlightPolicy":%q`, policy)
	}
	return b + "}"
}

func relPath(rid, av string) string { return releases.Location(rid, av) }

func TestHTTPReleaseLifecycle(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tenant, admin, runtime := s.tenantKeys(t)
	rid := tenant + "-reviewer"
	path := relPath(rid, "2.1.0")

	created := s.do(t, http.MethodPut, path, runtime, putBody(t, refsA, "verified", ""), nil)
	if created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	etag := created.Header().Get("ETag")
	if created.Header().Get("Location") != path || len(etag) != 18 {
		t.Fatalf("create headers: Location %q ETag %q", created.Header().Get("Location"), etag)
	}
	rel := decode[wireRelease](t, created)
	if rel.ReleaseID != rid || rel.AdapterVersion != "2.1.0" || rel.State != "verified" || rel.InFlightPolicy != "drain" ||
		string(rel.ContentRefs) != `[{"size":1200,"uri":"oci://agents/reviewer@sha256:aa"},{"uri":"s3://prompts/v3.json"}]` ||
		!strings.HasSuffix(rel.VerifiedAt, "Z") {
		t.Fatalf("created body: %s", created.Body)
	}

	for _, key := range []string{admin, runtime} {
		got := s.do(t, http.MethodGet, path, key, "", nil)
		if got.Code != http.StatusOK || got.Header().Get("ETag") != etag || decode[wireRelease](t, got).ManifestHash != rel.ManifestHash {
			t.Fatalf("get: %d %s %q", got.Code, got.Body, got.Header().Get("ETag"))
		}
	}

	// An unchanged repeat (another formatting of the same content) answers 200, writes nothing.
	again := s.do(t, http.MethodPut, path, runtime, putBody(t, `[{"uri":"oci://agents/reviewer@sha256:aa","size":12e2},{"uri":"s3://prompts/v3.json"}]`, "verified", "drain"), nil)
	if again.Code != http.StatusOK || again.Header().Get("ETag") != etag {
		t.Fatalf("repeat: %d %s %q", again.Code, again.Body, again.Header().Get("ETag"))
	}

	activate := putBody(t, refsA, "active", "cancel")
	wantProblem(t, s.do(t, http.MethodPut, path, admin, activate, nil), http.StatusPreconditionRequired, "precondition_required")
	wantProblem(t, s.do(t, http.MethodPut, path, admin, activate, map[string]string{"If-Match": `"00000000000000ff"`}),
		http.StatusPreconditionFailed, "precondition_failed")
	wantProblem(t, s.do(t, http.MethodPut, path, admin, activate, map[string]string{"If-Match": "W/" + etag}),
		http.StatusPreconditionFailed, "precondition_failed")
	moved := s.do(t, http.MethodPut, path, admin, activate, map[string]string{"If-Match": etag})
	if moved.Code != http.StatusOK || moved.Header().Get("ETag") == etag {
		t.Fatalf("activate: %d %s", moved.Code, moved.Body)
	}
	if m := decode[wireRelease](t, moved); m.State != "active" || m.InFlightPolicy != "cancel" {
		t.Fatalf("activated body: %s", moved.Body)
	}
	etag2 := moved.Header().Get("ETag")
	wantProblem(t, s.do(t, http.MethodPut, path, runtime, putBody(t, refsA, "verified", ""), map[string]string{"If-Match": etag2}),
		http.StatusConflict, "illegal_transition")
	wantProblem(t, s.do(t, http.MethodPut, path, runtime, putBody(t, `[{"uri":"oci://other"}]`, "active", ""), map[string]string{"If-Match": etag2}),
		http.StatusConflict, "release_immutable")
	// A well-formed hash that is not the content's.
	var mm map[string]json.RawMessage
	if err := json.Unmarshal([]byte(putBody(t, refsA, "active", "")), &mm); err != nil {
		t.Fatal(err)
	}
	mm["manifestHash"] = json.RawMessage(`"` + strings.Repeat("ab", 32) + `"`)
	mb, _ := json.Marshal(mm)
	wantProblem(t, s.do(t, http.MethodPut, path, runtime, string(mb), nil), http.StatusUnprocessableEntity, "manifest_mismatch")
	wantProblem(t, s.do(t, http.MethodPut, relPath(rid, "9"), runtime, string(mb), nil), http.StatusUnprocessableEntity, "manifest_mismatch")
	wantProblem(t, s.do(t, http.MethodGet, relPath(rid, "9"), admin, "", nil), http.StatusNotFound, "not_found")

	retired := s.do(t, http.MethodPut, path, runtime, putBody(t, refsA, "retired", ""), map[string]string{"If-Match": etag2})
	if retired.Code != http.StatusOK || decode[wireRelease](t, retired).State != "retired" {
		t.Fatalf("retire: %d %s", retired.Code, retired.Body)
	}
	wantProblem(t, s.do(t, http.MethodPut, path, runtime, putBody(t, refsA, "active", ""), map[string]string{"If-Match": retired.Header().Get("ETag")}),
		http.StatusConflict, "illegal_transition")
}

func TestHTTPBadRequestsAre400(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tenant, _, runtime := s.tenantKeys(t)
	path := relPath(tenant+"-r", "1")
	good := putBody(t, refsA, "active", "")
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		t.Fatal(err)
	}
	with := func(field, raw string) string {
		c := map[string]json.RawMessage{}
		for k, v := range m {
			c[k] = v
		}
		if raw == "" {
			delete(c, field)
		} else {
			c[field] = json.RawMessage(raw)
		}
		b, _ := json.Marshal(c)
		return string(b)
	}
	for _, c := range []struct{ name, body, field string }{
		{"unknown field", with("extra", `1`), "extra"},
		{"bad state", with("state", `"paused"`), "state"},
		{"missing state", with("state", ""), "state"},
		{"bad policy", with("inFlightPolicy", `"abort"`), "inFlightPolicy"},
		{"short hash", with("manifestHash", `"abc"`), "manifestHash"},
		{"non-hex hash", with("manifestHash", `"`+strings.Repeat("zz", 32)+`"`), "manifestHash"},
		{"missing contentRefs", with("contentRefs", ""), "contentRefs"},
		{"object contentRefs", with("contentRefs", `{"uri":"x"}`), "contentRefs"},
		{"null contentRefs", with("contentRefs", `null`), "contentRefs"},
		{"duplicate names", with("contentRefs", `[{"a":1,"a":2}]`), "contentRefs[0].a"},
		{"lone surrogate", with("contentRefs", `["\udead"]`), "contentRefs"},
		{"huge number", with("contentRefs", `[1e400]`), "contentRefs"},
		{"state as number", with("state", `1`), "state"},
	} {
		p := wantProblem(t, s.do(t, http.MethodPut, path, runtime, c.body, nil), http.StatusBadRequest, "invalid_request")
		if len(p.Errors) == 0 || p.Errors[0].Field != c.field {
			t.Errorf("%s: field errors %+v, want %s", c.name, p.Errors, c.field)
		}
	}
	for _, body := range []string{"", "[]", "{", `{"manifestHash":1}`, "null"} {
		wantProblem(t, s.do(t, http.MethodPut, path, runtime, body, nil), http.StatusBadRequest, "invalid_request")
	}
	long := strings.Repeat("v", 33) // adapterVersion is at most 32 (web's path parameter rules)
	wantProblem(t, s.do(t, http.MethodPut, relPath(tenant+"-r", long), runtime, good, nil), http.StatusBadRequest, "invalid_request")
	wantProblem(t, s.do(t, http.MethodGet, "/v1/releases?state=paused", runtime, "", nil), http.StatusBadRequest, "invalid_request")
	wantProblem(t, s.do(t, http.MethodGet, "/v1/releases?cursor=nonsense", runtime, "", nil), http.StatusBadRequest, "invalid_request")
	list := decode[api.Page[wireRelease]](t, s.do(t, http.MethodGet, "/v1/releases", runtime, "", nil))
	if len(list.Items) != 0 {
		t.Fatalf("a 400 wrote a release: %+v", list.Items)
	}
	wantProblem(t, s.do(t, http.MethodPut, path, "", good, nil), http.StatusUnauthorized, "unauthorized")
}

func TestHTTPReleaseConflictAcrossTenantsLeaksNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a, adminA, runtimeA := s.tenantKeys(t)
	_, adminB, runtimeB := s.tenantKeys(t)
	path := relPath(a+"-shared", "1")

	// What B sees of the pair before anyone has it...
	before := s.do(t, http.MethodGet, path, adminB, "", nil)
	wantProblem(t, before, http.StatusNotFound, "not_found")
	created := s.do(t, http.MethodPut, path, runtimeA, putBody(t, refsA, "active", "cancel"), nil)
	if created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	// ...is what it sees after A registered it.
	after := s.do(t, http.MethodGet, path, adminB, "", nil)
	if stripInstance(t, after) != stripInstance(t, before) {
		t.Fatalf("another tenant's release reads differently from a missing one:\n%s\n%s", before.Body, after.Body)
	}
	conflict := wantProblem(t, s.do(t, http.MethodPut, path, runtimeB, putBody(t, `[{"uri":"mine"}]`, "verified", ""), nil),
		http.StatusConflict, "release_conflict")
	var rel wireRelease
	_ = json.Unmarshal(created.Body.Bytes(), &rel)
	for _, leak := range []string{a, rel.ManifestHash, "active", "cancel", "shared", "oci://"} {
		if strings.Contains(conflict.Detail, leak) {
			t.Fatalf("release_conflict detail %q leaks %q", conflict.Detail, leak)
		}
	}
	// B may register no other version under A's id either (409 with the same generic detail),
	// and A still can.
	v2 := wantProblem(t, s.do(t, http.MethodPut, relPath(a+"-shared", "2"), runtimeB, putBody(t, `[{"uri":"mine"}]`, "verified", ""), nil),
		http.StatusConflict, "release_conflict")
	if v2.Detail != conflict.Detail {
		t.Fatalf("another version's conflict reads %q, the pair's %q", v2.Detail, conflict.Detail)
	}
	if r := s.do(t, http.MethodPut, relPath(a+"-shared", "2"), runtimeA, putBody(t, refsA, "verified", ""), nil); r.Code != http.StatusCreated {
		t.Fatalf("the owner's second version: %d %s", r.Code, r.Body)
	}
	// B's If-Match with A's ETag answers as for a missing release.
	wantProblem(t, s.do(t, http.MethodPut, path, adminB, putBody(t, refsA, "retired", ""), map[string]string{"If-Match": created.Header().Get("ETag")}),
		http.StatusPreconditionFailed, "precondition_failed")
	list := decode[api.Page[wireRelease]](t, s.do(t, http.MethodGet, "/v1/releases", runtimeB, "", nil))
	if len(list.Items) != 0 {
		t.Fatalf("B lists A's releases: %+v", list.Items)
	}
	got := decode[wireRelease](t, s.do(t, http.MethodGet, path, adminA, "", nil))
	if got.State != "active" || got.ManifestHash != rel.ManifestHash {
		t.Fatalf("A's release changed: %+v", got)
	}
}

func stripInstance(t *testing.T, r *httptest.ResponseRecorder) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "instance")
	b, _ := json.Marshal(m)
	return fmt.Sprintf("%d %s", r.Code, b)
}

func TestHTTPListPagesWithCursor(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tenant, admin, runtime := s.tenantKeys(t)
	var want []string
	for i := 0; i < 5; i++ {
		rid := fmt.Sprintf("%s-r%d", tenant, i)
		want = append(want, rid)
		state := "verified"
		if i%2 == 0 {
			state = "active"
		}
		if r := s.do(t, http.MethodPut, relPath(rid, "1"), runtime, putBody(t, refsA, state, ""), nil); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", rid, r.Code, r.Body)
		}
	}
	var got []string
	url := "/v1/releases?limit=2"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("cursor does not end")
		}
		page := decode[api.Page[wireRelease]](t, s.do(t, http.MethodGet, url, admin, "", nil))
		for _, r := range page.Items {
			got = append(got, r.ReleaseID)
		}
		if page.NextCursor == "" {
			break
		}
		url = "/v1/releases?limit=2&cursor=" + page.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages: got %v, want %v", got, want)
	}
	active := decode[api.Page[wireRelease]](t, s.do(t, http.MethodGet, "/v1/releases?state=active", admin, "", nil))
	if len(active.Items) != 3 || active.NextCursor != "" {
		t.Fatalf("state=active: %+v", active)
	}
}

// claimed is the part of a claim answer the tests use.
type claimed struct {
	Attempt struct {
		AttemptID string `json:"attemptId"`
	} `json:"attempt"`
	Lease struct {
		FencingToken int64 `json:"fencingToken"`
	} `json:"lease"`
}

func (s *stack) enqueueAndClaim(t *testing.T, runtime, subject, rid, av string) *httptest.ResponseRecorder {
	t.Helper()
	enq := fmt.Sprintf(`{"subject":%q,"kind":"review","projectId":"p1","agentId":"a","stepId":"%s","snapshotId":"%s"}`,
		subject, "6f1c1f7e-0000-4000-8000-000000000001", "6f1c1f7e-0000-4000-8000-000000000002")
	if r := s.do(t, http.MethodPost, "/v1/runs", runtime, enq, nil); r.Code != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", r.Code, r.Body)
	}
	return s.do(t, http.MethodPost, "/v1/runs/claim", runtime,
		fmt.Sprintf(`{"holderId":"h","releaseId":%q,"adapterVersion":%q,"modelProfileId":"m"}`, rid, av), nil)
}

func (s *stack) heartbeat(t *testing.T, runtime string, c claimed) bool {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1/attempts/"+c.Attempt.AttemptID+"/heartbeat", runtime,
		fmt.Sprintf(`{"fencingToken":%d}`, c.Lease.FencingToken), nil)
	if r.Code != http.StatusOK {
		t.Fatalf("heartbeat: %d %s", r.Code, r.Body)
	}
	return decode[runs.Heartbeat](t, r).CancelRequested
}

func TestHTTPClaimNeedsActiveRelease(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tenant, _, runtime := s.tenantKeys(t)
	other, _, runtimeOther := s.tenantKeys(t)
	rid := tenant + "-r"
	if r := s.do(t, http.MethodPut, relPath(other+"-x", "1"), runtimeOther, putBody(t, refsA, "active", ""), nil); r.Code != http.StatusCreated {
		t.Fatal(r.Body)
	}
	created := s.do(t, http.MethodPut, relPath(rid, "1"), runtime, putBody(t, refsA, "verified", ""), nil)
	if created.Code != http.StatusCreated {
		t.Fatal(created.Body)
	}
	wantProblem(t, s.enqueueAndClaim(t, runtime, "s1", rid, "1"), http.StatusUnprocessableEntity, "release_not_active")
	wantProblem(t, s.do(t, http.MethodPost, "/v1/runs/claim", runtime,
		fmt.Sprintf(`{"holderId":"h","releaseId":%q,"adapterVersion":"1","modelProfileId":"m"}`, other+"-x"), nil),
		http.StatusUnprocessableEntity, "release_not_active")
	wantProblem(t, s.do(t, http.MethodPost, "/v1/runs/claim", runtime,
		`{"holderId":"h","releaseId":"nobody","adapterVersion":"1","modelProfileId":"m"}`, nil),
		http.StatusUnprocessableEntity, "release_not_active")
	act := s.do(t, http.MethodPut, relPath(rid, "1"), runtime, putBody(t, refsA, "active", ""), map[string]string{"If-Match": created.Header().Get("ETag")})
	if act.Code != http.StatusOK {
		t.Fatal(act.Body)
	}
	ok := s.do(t, http.MethodPost, "/v1/runs/claim", runtime,
		fmt.Sprintf(`{"holderId":"h","releaseId":%q,"adapterVersion":"1","modelProfileId":"m"}`, rid), nil)
	if ok.Code != http.StatusOK {
		t.Fatalf("claim with an active release: %d %s", ok.Code, ok.Body)
	}
}

func TestHTTPDrainVersusCancel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy     string
		wantCancel bool
	}{{"", false}, {"drain", false}, {"cancel", true}} {
		t.Run("policy="+c.policy, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			tenant, admin, runtime := s.tenantKeys(t)
			rid := tenant + "-r"
			created := s.do(t, http.MethodPut, relPath(rid, "1"), runtime, putBody(t, refsA, "active", c.policy), nil)
			if created.Code != http.StatusCreated {
				t.Fatal(created.Body)
			}
			r := s.enqueueAndClaim(t, runtime, "s1", rid, "1")
			if r.Code != http.StatusOK {
				t.Fatalf("claim: %d %s", r.Code, r.Body)
			}
			cl := decode[claimed](t, r)
			if s.heartbeat(t, runtime, cl) {
				t.Fatal("cancel requested before the release drained")
			}
			drained := s.do(t, http.MethodPut, relPath(rid, "1"), admin, putBody(t, refsA, "draining", ""),
				map[string]string{"If-Match": created.Header().Get("ETag")})
			if drained.Code != http.StatusOK || decode[wireRelease](t, drained).State != "draining" {
				t.Fatalf("drain: %d %s", drained.Code, drained.Body)
			}
			if got := s.heartbeat(t, runtime, cl); got != c.wantCancel {
				t.Fatalf("after draining under %q: cancelRequested = %v, want %v", c.policy, got, c.wantCancel)
			}
			// No new claim may start on a draining release.
			wantProblem(t, s.enqueueAndClaim(t, runtime, "s2", rid, "1"), http.StatusUnprocessableEntity, "release_not_active")
		})
	}
}

func TestHTTPIdsRoundTripThroughEscapedPaths(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tenant, admin, runtime := s.tenantKeys(t)
	// An id that appears as a path segment holds no "/" (DESIGN.md 7a): refused in the
	// path, escaped or not, and in a claim's body.
	for _, p := range []string{relPath(tenant+"-team/reviewer", "1"), relPath(tenant+"-r", "1.0/7"), "/v1/releases/" + tenant + "-r/adapters/1.0%2F7"} {
		wantProblem(t, s.do(t, http.MethodPut, p, runtime, putBody(t, refsA, "active", ""), nil), http.StatusBadRequest, "invalid_request")
	}
	for i, rid := range []string{tenant + "-team:reviewer", tenant + "-a b", tenant + "-ä%20?#"} {
		av := "1.0+build.7"
		created := s.do(t, http.MethodPut, relPath(rid, av), runtime, putBody(t, refsA, "active", ""), nil)
		if created.Code != http.StatusCreated {
			t.Fatalf("create %q: %d %s", rid, created.Code, created.Body)
		}
		if got := decode[wireRelease](t, created); got.ReleaseID != rid || got.AdapterVersion != av {
			t.Fatalf("stored ids %q %q, want %q %q", got.ReleaseID, got.AdapterVersion, rid, av)
		}
		read := s.do(t, http.MethodGet, created.Header().Get("Location"), admin, "", nil)
		if read.Code != http.StatusOK || decode[wireRelease](t, read).ReleaseID != rid {
			t.Fatalf("read %q through its Location: %d %s", rid, read.Code, read.Body)
		}
		// A claim names the release in its body, unescaped: it must find the same row.
		if r := s.enqueueAndClaim(t, runtime, fmt.Sprintf("s%d", i), rid, av); r.Code != http.StatusOK {
			t.Fatalf("claim with %q: %d %s", rid, r.Code, r.Body)
		}
	}
}
