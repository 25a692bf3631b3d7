package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

type httpEnv struct {
	t                     testing.TB
	db                    *sqldb.DB
	url                   string
	runtime, admin, other string
	stack                 *apitest.Stack
	// active are the releases activated (claimAs activates the others first).
	active map[string]bool
}

func newHTTPEnv(t testing.TB) *httpEnv {
	t.Helper()
	// The database keeps its own clock: the list filters are asked about the real time.
	s := apitest.New(t, apitest.Config{DB: dbtest.SQLite().Open(t, dbtest.Options{}), Serve: true})
	db, keys := s.DB, s.Keys
	ctx := context.Background()
	e := &httpEnv{t: t, url: s.URL, db: db, stack: s, active: map[string]bool{"r1": true}}
	var err error
	mk := func(tenant, role string) string {
		k, _, kerr := keys.CreateKey(ctx, tenant, role)
		if kerr != nil {
			err = kerr
		}
		return k
	}
	e.runtime, e.admin, e.other = mk("acme", "runtime"), mk("acme", "admin"), mk("globex", "runtime")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := projects.NewStore(db).Put(ctx, "acme", "p1", projects.Change{}); err != nil {
		t.Fatal(err)
	}
	s.ActivateRelease(t, e.runtime, "r1", "1.0") // the release claimBody names
	return e
}

// do sends a JSON request and decodes a JSON answer into out (when non-nil).
func (e *httpEnv) do(method, path, key, body string, out any) (int, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return res.StatusCode, res.Header
}

type problem struct {
	Code      string `json:"code"`
	HeldUntil string `json:"heldUntil"`
	Errors    []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

func enqueueBody(subject string, extra string) string {
	return fmt.Sprintf(`{"subject":%q,"kind":"review","projectId":"p1","agentId":"a1","stepId":%q,"snapshotId":%q%s}`,
		subject, uuid.NewString(), uuid.NewString(), extra)
}

const claimBody = `{"holderId":"h1","releaseId":"r1","adapterVersion":"1.0","modelProfileId":"m"}`

func TestHTTPRunLifecycle(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	var run map[string]any
	body := enqueueBody("review:1", `,"idempotencyKey":"ev-1","input":{"pr":1}`)
	code, h := e.do("POST", "/v1/runs", e.runtime, body, &run)
	if code != 201 || h.Get("Location") == "" || h.Get("ETag") == "" || run["state"] != "queued" || run["band"] != "batch" {
		t.Fatalf("enqueue: %d %v %v", code, h, run)
	}
	var again map[string]any
	if code, h2 := e.do("POST", "/v1/runs", e.runtime, body, &again); code != 200 || again["runId"] != run["runId"] || h2.Get("ETag") != h.Get("ETag") {
		t.Fatalf("repeat enqueue: %d %v", code, again)
	}
	var reused problem
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("other", `,"idempotencyKey":"ev-1"`), &reused); code != 409 || reused.Code != "idempotency_key_reused" {
		t.Fatalf("key reused for another run: %d %+v, want 409 idempotency_key_reused", code, reused)
	}
	var claimed struct {
		Run     map[string]any `json:"run"`
		Attempt map[string]any `json:"attempt"`
		Lease   struct {
			FencingToken int64 `json:"fencingToken"`
		} `json:"lease"`
	}
	if code, _ := e.do("POST", "/v1/runs/claim", e.runtime, claimBody, &claimed); code != 200 || claimed.Lease.FencingToken != 1 {
		t.Fatalf("claim: %d %+v", code, claimed)
	}
	attempt := claimed.Attempt["attemptId"].(string)
	if code, _ := e.do("POST", "/v1/runs/claim", e.runtime, claimBody, nil); code != 204 {
		t.Fatalf("claim with nothing due: %d, want 204", code)
	}
	var hb map[string]any
	if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/heartbeat", e.runtime, `{"fencingToken":1}`, &hb); code != 200 || hb["cancelRequested"] != false {
		t.Fatalf("heartbeat: %d %v", code, hb)
	}
	var p problem
	if code, h := e.do("POST", "/v1/attempts/"+attempt+"/heartbeat", e.runtime, `{"fencingToken":7}`, &p); code != 409 || p.Code != "stale_lease" ||
		!strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("stale heartbeat: %d %+v", code, p)
	}
	if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/heartbeat", e.other, `{"fencingToken":1}`, &p); code != 404 || p.Code != "not_found" {
		t.Fatalf("other tenant's heartbeat: %d %+v", code, p)
	}
	if code, _ := e.do("PATCH", "/v1/attempts/"+attempt, e.runtime, `{"fencingToken":1,"phase":"acting"}`, nil); code != 200 {
		t.Fatalf("patch: %d", code)
	}
	runID := run["runId"].(string)
	if code, _ := e.do("POST", "/v1/runs/"+runID+"/cancel", e.runtime, ``, &p); code != 403 || p.Code != "forbidden" {
		t.Fatalf("runtime cancel: %d %+v, want 403", code, p)
	}
	if code, _ := e.do("POST", "/v1/runs/"+runID+"/cancel", e.admin, ``, nil); code != 200 {
		t.Fatalf("admin cancel: %d", code)
	}
	if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/heartbeat", e.runtime, `{"fencingToken":1}`, &hb); code != 200 || hb["cancelRequested"] != true {
		t.Fatalf("heartbeat after cancel: %d %v", code, hb)
	}
	var done map[string]any
	if code, h := e.do("POST", "/v1/attempts/"+attempt+"/complete", e.runtime, `{"fencingToken":1,"state":"cancelled"}`, &done); code != 200 || done["state"] != "cancelled" || h.Get("ETag") == "" {
		t.Fatalf("complete: %d %v", code, done)
	}
	if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/complete", e.runtime, `{"fencingToken":1,"state":"cancelled"}`, nil); code != 200 {
		t.Fatalf("repeat complete: %d", code)
	}
	var got map[string]any
	if code, _ := e.do("GET", "/v1/runs/"+runID, e.admin, ``, &got); code != 200 || got["state"] != "ended" || got["outcome"] != "cancelled" {
		t.Fatalf("read ended run: %d %v", code, got)
	}
	if code, _ := e.do("GET", "/v1/runs/"+runID, e.other, ``, &p); code != 404 {
		t.Fatalf("other tenant read: %d", code)
	}
	var next map[string]any
	if code, _ := e.do("POST", "/v1/runs/"+runID+"/continue", e.admin, ``, &next); code != 201 || next["continuedFromRunId"] != runID || next["attemptsSpent"] != float64(1) {
		t.Fatalf("continue: %d %v", code, next)
	}
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"nextCursor"`
	}
	if code, _ := e.do("GET", "/v1/runs?limit=1", e.admin, ``, &page); code != 200 || len(page.Items) != 1 || page.NextCursor == "" {
		t.Fatalf("list: %d %+v", code, page)
	}
	first, cursor := page.Items[0]["runId"], page.NextCursor
	page.NextCursor, page.Items = "", nil
	if code, _ := e.do("GET", "/v1/runs?limit=1&cursor="+cursor, e.admin, ``, &page); code != 200 || len(page.Items) != 1 || page.Items[0]["runId"] == first || page.NextCursor != "" {
		t.Fatalf("second page: %d %+v", code, page)
	}
}

func TestHTTPRunBadInput(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	cases := []struct {
		name, method, path, body, code, field string
		status                                int
	}{
		{"UnknownField", "POST", "/v1/runs", enqueueBody("s", `,"bogus":1`), "invalid_request", "bogus", 400},
		{"BadBand", "POST", "/v1/runs", enqueueBody("s", `,"band":"urgent"`), "invalid_request", "band", 400},
		{"MissingSubject", "POST", "/v1/runs", `{"kind":"k","projectId":"p1","agentId":"a","stepId":"` + uuid.NewString() + `","snapshotId":"` + uuid.NewString() + `"}`, "invalid_request", "subject", 400},
		{"BadStepID", "POST", "/v1/runs", `{"subject":"s","kind":"k","projectId":"p1","agentId":"a","stepId":"nope","snapshotId":"` + uuid.NewString() + `"}`, "invalid_request", "stepId", 400},
		{"WrongType", "POST", "/v1/runs", enqueueBody("s", `,"maxAttempts":"three"`), "invalid_request", "maxAttempts", 400},
		{"UnknownProject", "POST", "/v1/runs", strings.Replace(enqueueBody("s", ""), `"p1"`, `"nope"`, 1), "unknown_project", "", 422},
		{"WaitTooLong", "POST", "/v1/runs/claim", `{"holderId":"h","releaseId":"r","adapterVersion":"1","modelProfileId":"m","waitSeconds":31}`, "invalid_request", "waitSeconds", 400},
		{"MissingToken", "POST", "/v1/attempts/" + uuid.NewString() + "/heartbeat", `{}`, "invalid_request", "fencingToken", 400},
		{"MalformedAttemptID", "POST", "/v1/attempts/not-a-uuid/heartbeat", `{"fencingToken":1}`, "invalid_request", "attemptId", 400},
		{"BadCompleteState", "POST", "/v1/attempts/" + uuid.NewString() + "/complete", `{"fencingToken":1,"state":"lost"}`, "invalid_request", "state", 400},
		{"LockTTLTooLong", "PUT", "/v1/locks/agents/a/tasks/t", `{"holderId":"h","ttlSeconds":86401}`, "invalid_request", "ttlSeconds", 400},
		{"MalformedJSON", "POST", "/v1/runs", `{"subject":`, "invalid_request", "", 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p problem
			code, _ := e.do(c.method, c.path, e.runtime, c.body, &p)
			if code != c.status || p.Code != c.code {
				t.Fatalf("got %d %q, want %d %q", code, p.Code, c.status, c.code)
			}
			if c.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != c.field) {
				t.Fatalf("field errors %+v, want %q", p.Errors, c.field)
			}
		})
	}
	var page struct {
		Items []any `json:"items"`
	}
	if code, _ := e.do("GET", "/v1/runs", e.admin, ``, &page); code != 200 || len(page.Items) != 0 {
		t.Fatalf("bad input wrote runs: %d %v", code, page.Items)
	}
}

// TestHTTPListRunsFilters: the runs list filters by agent, band and queued time like the
// console's list, and a cursor answers only the filters it was made with.
func TestHTTPListRunsFilters(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	for i, extra := range []string{`,"agentId":"a1"`, `,"agentId":"a2","band":"interactive"`, `,"agentId":"a2"`} {
		body := strings.Replace(enqueueBody(fmt.Sprintf("filters:%d", i), ""), `"agentId":"a1",`, "", 1)
		if code, _ := e.do("POST", "/v1/runs", e.runtime, body[:len(body)-1]+extra+"}", nil); code != 201 {
			t.Fatalf("enqueue %d: %d", i, code)
		}
	}
	count := func(query string) int {
		t.Helper()
		var page struct{ Items []map[string]any }
		if code, _ := e.do("GET", "/v1/runs?"+query, e.admin, ``, &page); code != 200 {
			t.Fatalf("%s: %d", query, code)
		}
		return len(page.Items)
	}
	past, future := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for query, want := range map[string]int{
		"agentId=a2": 2, "band=interactive": 1, "agentId=a2&band=batch": 1, "agentId=a1&band=interactive": 0,
		"queuedFrom=" + past: 3, "queuedFrom=" + future: 0, "queuedTo=" + future: 3, "queuedTo=" + past: 0,
		"queuedFrom=" + past + "&queuedTo=" + future + "&agentId=a1": 1,
	} {
		if got := count(query); got != want {
			t.Errorf("%s: %d runs, want %d", query, got, want)
		}
	}
	var p problem
	if code, _ := e.do("GET", "/v1/runs?queuedFrom="+future+"&queuedTo="+past, e.admin, ``, &p); code != 400 || len(p.Errors) != 1 || p.Errors[0].Field != "queuedTo" {
		t.Errorf("queuedTo before queuedFrom: %d %+v", code, p)
	}

	var page struct {
		Items      []map[string]any
		NextCursor string
	}
	if code, _ := e.do("GET", "/v1/runs?agentId=a2&limit=1", e.admin, ``, &page); code != 200 || page.NextCursor == "" {
		t.Fatalf("first page: %d %+v", code, page)
	}
	cursor := page.NextCursor
	for _, other := range []string{"agentId=a1", "agentId=a2&band=batch", "", "state=queued&agentId=a2"} {
		p = problem{}
		if code, _ := e.do("GET", "/v1/runs?"+other+"&cursor="+cursor, e.admin, ``, &p); code != 400 || len(p.Errors) != 1 || p.Errors[0].Field != "cursor" {
			t.Errorf("the cursor with %q: %d %+v, want 400 naming cursor", other, code, p)
		}
	}
	page.NextCursor = ""
	if code, _ := e.do("GET", "/v1/runs?limit=1&cursor="+cursor+"&agentId=a2", e.admin, ``, &page); code != 200 || len(page.Items) != 1 ||
		page.Items[0]["agentId"] != "a2" || page.NextCursor != "" {
		t.Errorf("the cursor with its own filters: %d %+v", code, page)
	}
}

// TestEnqueueKeepsTheCallersTraceParent: a traceparent in the body, or else the request's
// header, is kept with the run (and not compared by an idempotency key); a malformed one in
// the body is 400 naming it, in the header ignored.
func TestEnqueueKeepsTheCallersTraceParent(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{})
	_, _, rt := s.TenantKeys(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	body := func(subject, extra string) string {
		return `{"subject":"` + subject + `","kind":"k","projectId":"p1","agentId":"a","stepId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e51",` +
			`"snapshotId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e52"` + extra + `}`
	}
	r := s.Do(t, http.MethodPost, "/v1/runs", rt, body("tp-1", `,"traceparent":"`+tp+`","idempotencyKey":"tp-1"`), nil)
	apitest.WantStatus(t, r, http.StatusCreated)
	if got := apitest.DecodeAs[api.Run](t, r); got.TraceParent == nil || *got.TraceParent != tp {
		t.Fatalf("run %+v, want traceparent %s", got, tp)
	}
	// A retry with another trace context is the same request.
	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/runs", rt, body("tp-1", `,"traceparent":"`+other+`","idempotencyKey":"tp-1"`), nil), http.StatusOK)
	r = s.Do(t, http.MethodPost, "/v1/runs", rt, body("tp-2", ""), map[string]string{"traceparent": other})
	apitest.WantStatus(t, r, http.StatusCreated)
	if got := apitest.DecodeAs[api.Run](t, r); got.TraceParent == nil || *got.TraceParent != other {
		t.Fatalf("run from the header %+v", got)
	}
	r = s.Do(t, http.MethodPost, "/v1/runs", rt, body("tp-3", ""), map[string]string{"traceparent": "00-zz"})
	apitest.WantStatus(t, r, http.StatusCreated)
	if got := apitest.DecodeAs[api.Run](t, r); got.TraceParent != nil {
		t.Fatalf("a malformed header was kept: %+v", got)
	}
	for _, bad := range []string{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"} {
		apitest.WantFields(t, s.Do(t, http.MethodPost, "/v1/runs", rt, body("tp-bad", `,"traceparent":"`+bad+`"`), nil), "traceparent")
	}
}
