package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/ledger-dev/ledger/internal/syncbuf"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The HTTP rules of DESIGN.md section 7 hold for every route at once, so these tests walk
// the route table (the served document and Echo's routes) instead of naming routes: a
// route added later is covered without a new case.

// docOp is what the route walks read of an operation in /openapi.json.
type docOp struct {
	RequestBody *struct {
		Required bool `json:"required"`
	} `json:"requestBody"`
	Parameters []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
		// Explode marks a list: the parameter repeated, one item each.
		Explode bool `json:"explode"`
	} `json:"parameters"`
	Responses map[string]struct {
		Headers map[string]json.RawMessage `json:"headers"`
	} `json:"responses"`
	Roles    []string         `json:"x-roles"`
	Security []map[string]any `json:"security"`
}

// route is one documented operation: its method, Echo path and document entry.
type route struct {
	method, path string
	op           docOp
}

func routeTable(t *testing.T, s *stack) []route {
	t.Helper()
	r := s.do(t, req{method: http.MethodGet, path: "/openapi.json"})
	wantStatus(t, r, http.StatusOK)
	var doc struct {
		Paths map[string]map[string]docOp `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var out []route
	for _, name := range s.app.Server.Operations() {
		method, path, _ := strings.Cut(name, " ")
		op, ok := doc.Paths[openAPIPath(path)][strings.ToLower(method)]
		if !ok {
			t.Fatalf("%s is not in the document", name)
		}
		out = append(out, route{method: method, path: path, op: op})
	}
	if len(out) < 20 {
		t.Fatalf("only %d routes: the walk proves little", len(out))
	}
	return out
}

// keyFor is a key of a role the route admits ("" for a public route).
func (r route) keyFor(admin, runtime string) string {
	switch {
	case len(r.op.Security) == 0:
		return ""
	case len(r.op.Roles) == 0 || slices.Contains(r.op.Roles, "admin"):
		return admin
	}
	return runtime
}

// world is one of every resource of a tenant, made through the API, and the path values
// that name them.
type world struct {
	admin, runtime string
	values         map[string]string
	token          string
	runID          string
}

func newWorld(t *testing.T, s *stack) world {
	t.Helper()
	_, admin, runtime := s.tenantKeys(t)
	must := func(r response, status int) map[string]any {
		t.Helper()
		wantStatus(t, r, status)
		return decode[map[string]any](t, r)
	}
	str := func(m map[string]any, path ...string) string {
		t.Helper()
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		switch x := v.(type) {
		case string:
			return x
		case float64:
			return fmt.Sprint(int64(x))
		}
		t.Fatalf("no %v in %v", path, m)
		return ""
	}
	must(s.do(t, req{method: http.MethodPut, path: "/v1/projects/w-proj", key: admin, body: `{}`}), http.StatusCreated)
	// An address literal: no name is resolved, and no test here runs the dispatcher, so it
	// is never dialled.
	must(s.do(t, req{method: http.MethodPut, path: "/v1/webhooks/w-hook", key: admin,
		body: `{"url":"https://203.0.113.9/hook","events":["decision.requested"]}`}), http.StatusCreated)
	refs := `["x://w"]`
	sum := sha256.Sum256([]byte(refs))
	must(s.do(t, req{method: http.MethodPut, path: "/v1/releases/w-rel/adapters/1.0", key: runtime,
		body: fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)}), http.StatusCreated)
	enq := func(subject string) string {
		return fmt.Sprintf(`{"subject":%q,"kind":"w","projectId":"w-proj","agentId":"w-agent","stepId":%q,"snapshotId":%q}`,
			subject, uuid.NewString(), uuid.NewString())
	}
	run := str(must(s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: enq("w-1")}), http.StatusCreated), "runId")
	cl := must(s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: runtime,
		body: `{"holderId":"h","releaseId":"w-rel","adapterVersion":"1.0","modelProfileId":"m","leaseSeconds":3600}`}), http.StatusOK)
	att, token := str(cl, "attempt", "attemptId"), str(cl, "lease", "fencingToken")
	at := "/v1/attempts/" + att
	cp := str(must(s.do(t, req{method: http.MethodPost, path: at + "/checkpoints", key: runtime,
		body: fmt.Sprintf(`{"fencingToken":%s,"sequence":0,"phase":"planning","adapterStateRef":"x://s","adapterVersion":"1.0","hash":"h"}`, token)}), http.StatusCreated), "checkpointId")
	call := str(must(s.do(t, req{method: http.MethodPost, path: at + "/calls", key: runtime,
		body: fmt.Sprintf(`{"fencingToken":%s,"sequence":0,"kind":"tool","target":"t","requestHash":"rh"}`, token)}), http.StatusCreated), "callId")
	dec := str(must(s.do(t, req{method: http.MethodPost, path: at + "/decisions", key: runtime,
		body: fmt.Sprintf(`{"fencingToken":%s,"kind":"approval","expiresInSeconds":86400}`, token)}), http.StatusCreated), "decisionId")
	del := str(must(s.do(t, req{method: http.MethodPost, path: at + "/delegations", key: runtime,
		body: fmt.Sprintf(`{"fencingToken":%s,"purpose":"p","child":%s}`, token, enq("w-child"))}), http.StatusCreated), "delegationId")
	must(s.do(t, req{method: http.MethodPut, path: "/v1/locks/agents/w-agent/tasks/w-task", key: runtime, body: `{"holderId":"h","ttlSeconds":3600}`}), http.StatusOK)
	must(s.do(t, req{method: http.MethodPut, path: "/v1/schedules/w-sched", key: admin, body: `{"cron":"@daily","run":` + enq("w-sched") + `}`}), http.StatusCreated)
	op := str(must(s.do(t, req{method: http.MethodPost, path: "/v1/runs/bulk", key: admin, body: `{"action":"continue","runIds":["` + run + `"]}`}), http.StatusAccepted), "operationId")
	deliveries := must(s.do(t, req{method: http.MethodGet, path: "/v1/webhook-deliveries?limit=1", key: admin}), http.StatusOK)
	delivery := deliveries["items"].([]any)[0].(map[string]any)["deliveryId"].(string)
	return world{admin: admin, runtime: runtime, token: token, runID: run, values: map[string]string{
		"projectId": "w-proj", "releaseId": "w-rel", "adapterVersion": "1.0", "runId": run, "attemptId": att,
		"checkpointId": cp, "callId": call, "decisionId": dec, "delegationId": del, "agentId": "w-agent", "taskId": "w-task",
		"scheduleId": "w-sched", "webhookName": "w-hook", "deliveryId": delivery, "operationId": op,
	}}
}

func (w world) path(t *testing.T, r route) string {
	t.Helper()
	p, err := fillPath(r.path, w.values)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return p
}

// header values that may differ between two answers to the same request.
var volatileHeaders = []string{"Date", "X-Request-Id", "Content-Length"}

func TestEveryGETAnswersHEAD(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	n := 0
	for _, r := range routeTable(t, s) {
		if r.method != http.MethodGet || r.path == "/metrics" {
			continue // the metrics change between the two requests
		}
		n++
		path := w.path(t, r)
		key := r.keyFor(w.admin, w.runtime)
		for _, p := range []string{path, path + "?zz=1"} { // a success and a problem alike
			get := s.do(t, req{method: http.MethodGet, path: p, key: key})
			head := s.do(t, req{method: http.MethodHead, path: p, key: key})
			if head.status != get.status {
				t.Errorf("HEAD %s: %d, GET %d", p, head.status, get.status)
			}
			if len(head.body) != 0 {
				t.Errorf("HEAD %s sent a body: %s", p, head.body)
			}
			for k := range get.header {
				if slices.Contains(volatileHeaders, k) {
					continue
				}
				if g, h := get.header.Values(k), head.header.Values(k); !slices.Equal(g, h) {
					t.Errorf("HEAD %s: header %s %q, GET %q", p, k, h, g)
				}
			}
		}
		if get := s.do(t, req{method: http.MethodGet, path: path, key: key}); get.status != http.StatusOK {
			t.Errorf("GET %s: %d %s (the world should make every GET succeed)", path, get.status, get.body)
		}
	}
	if n < 15 {
		t.Fatalf("only %d GET routes", n)
	}
	checkStatusesDocumented(t, s) // HEAD's answers are in the document too
}

// TestEveryPathAnswers405WithAllow sends every method to every known path without a key:
// the methods listed in Allow are served (401, or an answer of a public route), every other
// is 405 method_not_allowed with the same Allow, which lists at least the documented
// methods and HEAD exactly where GET is.
func TestEveryPathAnswers405WithAllow(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	documented := map[string][]string{} // concrete path -> documented methods
	for _, r := range routeTable(t, s) {
		p := w.path(t, r)
		documented[p] = append(documented[p], r.method)
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodTrace, "PURGE"}
	for path, docMethods := range documented {
		answers := map[string]response{}
		var allow string
		for _, m := range methods {
			r := s.do(t, req{method: m, path: path})
			answers[m] = r
			if r.status == http.StatusMethodNotAllowed {
				if m != http.MethodHead { // HEAD carries no problem body
					if p := wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed"); p.Detail == "" {
						t.Errorf("%s %s: 405 without a detail", m, path)
					}
				}
				a := r.header.Get("Allow")
				if allow != "" && a != allow {
					t.Errorf("%s: Allow %q for %s, %q before", path, a, m, allow)
				}
				allow = a
			}
		}
		if allow == "" {
			t.Errorf("%s: no method answered 405", path)
			continue
		}
		listed := strings.Split(allow, ", ")
		for _, m := range docMethods {
			if !slices.Contains(listed, m) {
				t.Errorf("%s: Allow %q misses the documented %s", path, allow, m)
			}
		}
		if slices.Contains(listed, http.MethodGet) != slices.Contains(listed, http.MethodHead) {
			t.Errorf("%s: Allow %q lists one of GET and HEAD without the other", path, allow)
		}
		for _, m := range methods {
			served := answers[m].status != http.StatusMethodNotAllowed
			if served != slices.Contains(listed, m) {
				t.Errorf("%s %s answered %d but Allow is %q", m, path, answers[m].status, allow)
			}
		}
	}
}

func TestEveryConditionalGETAnswers304(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	n := 0
	for _, r := range routeTable(t, s) {
		if r.method != http.MethodGet || r.op.Responses["200"].Headers["ETag"] == nil {
			continue
		}
		n++
		if r.op.Responses["304"].Headers["ETag"] == nil {
			t.Errorf("GET %s sends an ETag but documents no 304 with one", r.path)
		}
		path := w.path(t, r)
		key := r.keyFor(w.admin, w.runtime)
		get := s.do(t, req{method: http.MethodGet, path: path, key: key})
		wantStatus(t, get, http.StatusOK)
		etag := get.header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		other := `"00000000000000ff"`
		for _, c := range []struct {
			inm    string
			status int
		}{
			{etag, http.StatusNotModified},
			{"*", http.StatusNotModified},
			{"W/" + etag, http.StatusNotModified}, // If-None-Match compares weakly
			{other + ", " + etag, http.StatusNotModified},
			{other, http.StatusOK},
		} {
			for _, m := range []string{http.MethodGet, http.MethodHead} {
				res := s.do(t, req{method: m, path: path, key: key, header: map[string]string{"If-None-Match": c.inm}})
				if res.status != c.status {
					t.Errorf("%s %s If-None-Match %s: %d, want %d", m, path, c.inm, res.status, c.status)
					continue
				}
				if c.status == http.StatusNotModified {
					if len(res.body) != 0 || res.header.Get("ETag") != etag || res.header.Get("Content-Type") != "" {
						t.Errorf("%s %s 304: ETag %q (want %q), Content-Type %q, body %q", m, path, res.header.Get("ETag"), etag,
							res.header.Get("Content-Type"), res.body)
					}
				}
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d GET routes with an ETag", n)
	}
	checkStatusesDocumented(t, s)
}

// TestEveryBodyRouteRefusesNonJSON: 415 for any body not declared JSON, whatever the route
// would do with it otherwise; JSON media types with parameters pass.
func TestEveryBodyRouteRefusesNonJSON(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	_, admin, runtime := s.tenantKeys(t)
	values := map[string]string{"projectId": "p", "releaseId": "r", "adapterVersion": "1", "agentId": "a", "taskId": "t", "scheduleId": "s", "webhookName": "w"}
	n := 0
	for _, r := range routeTable(t, s) {
		if r.op.RequestBody == nil {
			continue
		}
		n++
		for k := range isoUUIDParams {
			values[k] = uuid.NewString()
		}
		path, err := fillPath(r.path, values)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.op.Responses["415"]; !ok {
			t.Errorf("%s %s takes a body but documents no 415", r.method, r.path)
		}
		key := r.keyFor(admin, runtime)
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonx", "application/+json", "", "multipart/form-data; boundary=x"} {
			h := map[string]string{"Content-Type": ct}
			if ct == "" {
				h = map[string]string{"Content-Type": ""} // deleted below: a body without a type
			}
			res := s.doRaw(t, r.method, path, key, `{}`, h)
			wantProblem(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8", "application/problem+json", "application/merge-patch+json"} {
			res := s.doRaw(t, r.method, path, key, `{"zz":1,"zz":2}`, map[string]string{"Content-Type": ct})
			p := wantProblem(t, res, http.StatusBadRequest, "invalid_request")
			if !hasField(p, "zz", "more than once") {
				t.Errorf("%s %s (%s): duplicate member not named: %+v", r.method, path, ct, p.Errors)
			}
		}
		// No body and no Content-Type: the route reads an empty body (never 415).
		res := s.doRaw(t, r.method, path, key, "", nil)
		if res.status == http.StatusUnsupportedMediaType {
			t.Errorf("%s %s without a body answered 415", r.method, path)
		}
		if r.op.RequestBody.Required {
			p := wantProblem(t, res, http.StatusBadRequest, "invalid_request")
			if p.Detail != "a JSON body is required" {
				t.Errorf("%s %s without a body: %+v", r.method, path, p)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d routes take a body", n)
	}
	checkStatusesDocumented(t, s)
}

func hasField(p problem, field, fragment string) bool {
	for _, e := range p.Errors {
		if e.Field == field && strings.Contains(e.Reason, fragment) {
			return true
		}
	}
	return false
}

// doRaw sends body with exactly the headers given (no Content-Type unless header sets a
// non-empty one).
func (s *stack) doRaw(t *testing.T, method, path, key, body string, header map[string]string) response {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequest(method, s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		hr, err = http.NewRequest(method, s.srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
	}
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		if v != "" {
			hr.Header.Set(k, v)
		}
	}
	res, err := s.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b.Bytes()}
}

// TestEveryRouteRefusesUnknownQueryParameters: a parameter a route does not declare is 400
// naming it, before the route does anything; so is a declared one given twice.
func TestEveryRouteRefusesUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	for _, r := range routeTable(t, s) {
		path := w.path(t, r)
		key := r.keyFor(w.admin, w.runtime)
		body := ""
		if r.op.RequestBody != nil {
			body = `{}`
		}
		res := s.do(t, req{method: r.method, path: path + "?zz=1&limit2=3", key: key, body: body})
		p := wantProblem(t, res, http.StatusBadRequest, "invalid_request")
		if !hasField(p, "zz", "not a query parameter") || !hasField(p, "limit2", "not a query parameter") {
			t.Errorf("%s %s?zz=1&limit2=3: %+v", r.method, path, p.Errors)
		}
		for _, q := range r.op.Parameters {
			if q.In != "query" {
				continue
			}
			// Names match exactly: another case is another (unknown) parameter.
			res := s.do(t, req{method: r.method, path: path + "?" + strings.ToLower(q.Name) + "x=1", key: key, body: body})
			wantProblem(t, res, http.StatusBadRequest, "invalid_request")
			res = s.do(t, req{method: r.method, path: path + "?" + q.Name + "=1&" + q.Name + "=2", key: key, body: body})
			if q.Explode {
				// A list takes the repeat as its items (the items' own rules may refuse "1").
				if res.status == http.StatusBadRequest && hasField(wantProblem(t, res, http.StatusBadRequest, "invalid_request"), q.Name, "more than once") {
					t.Errorf("%s %s?%s twice: a list refused its repeat", r.method, path, q.Name)
				}
				continue
			}
			if p := wantProblem(t, res, http.StatusBadRequest, "invalid_request"); !hasField(p, q.Name, "more than once") {
				t.Errorf("%s %s?%s twice: %+v", r.method, path, q.Name, p.Errors)
			}
		}
	}
	// The case of the issue: a misspelt filter no longer widens the listing.
	r := s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectid=w-proj", key: w.admin})
	if p := wantProblem(t, r, http.StatusBadRequest, "invalid_request"); !hasField(p, "projectid", "") {
		t.Fatalf("?projectid: %+v", p.Errors)
	}
	checkStatusesDocumented(t, s)
}

// TestQueryStringGoCannotParseIs400 is issue 17 item 6: past Go's limit of 10,000 query
// parameters (or with a bad escape) Echo saw no parameters at all, so the filter was
// dropped and another project's runs answered 200. Now that is 400, and an answer listing
// thousands of bad parameters is bounded: the first api.MaxFieldErrors and a count.
func TestQueryStringGoCannotParseIs400(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	_, admin, runtime := s.tenantKeys(t)
	for _, p := range []string{"pp1", "pp2"} {
		wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/" + p, key: admin, body: `{}`}), http.StatusCreated)
	}
	body := fmt.Sprintf(`{"subject":"s","kind":"k","projectId":"pp2","agentId":"a","stepId":%q,"snapshotId":%q}`, uuid.NewString(), uuid.NewString())
	wantStatus(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: body}), http.StatusCreated)

	junk := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "&j%d=1", i)
		}
		return b.String()
	}
	// The reproduction: the filter and 10,001 junk parameters.
	r := s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectId=pp1&limit=1&" + junk(10_001), key: admin})
	if p := wantProblem(t, r, http.StatusBadRequest, "invalid_request"); !strings.Contains(p.Detail, "too many parameters") {
		t.Fatalf("past the parameter limit: %+v", p)
	}
	// A bad escape made Go drop the pair: the filter went with it.
	r = s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectId=pp1%zz", key: admin})
	wantProblem(t, r, http.StatusBadRequest, "invalid_request")
	r = s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectId=pp1;limit=1", key: admin})
	wantProblem(t, r, http.StatusBadRequest, "invalid_request")

	// Under the limit: every parameter unknown, the answer bounded.
	r = s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectId=pp1" + junk(500) + "&" + strings.Repeat("a", 5000) + "=1", key: admin})
	p := wantProblem(t, r, http.StatusBadRequest, "invalid_request")
	var more struct {
		MoreErrors int `json:"moreErrors"`
	}
	if err := json.Unmarshal(r.body, &more); err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) != api.MaxFieldErrors || len(p.Errors)+more.MoreErrors != 501 {
		t.Fatalf("%d errors listed and %d more, want %d and %d", len(p.Errors), more.MoreErrors, api.MaxFieldErrors, 501-api.MaxFieldErrors)
	}
	if len(r.body) > 4<<10 {
		t.Fatalf("a problem of %d bytes for 501 bad parameters", len(r.body))
	}
	// The filter that parses still filters.
	r = s.do(t, req{method: http.MethodGet, path: "/v1/runs?projectId=pp1", key: admin})
	wantStatus(t, r, http.StatusOK)
	if page := decode[map[string]any](t, r); len(page["items"].([]any)) != 0 {
		t.Fatalf("pp1 lists another project's runs: %v", page["items"])
	}
}

func TestLocationIsPathEscaped(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	_, admin, runtime := s.tenantKeys(t)
	for _, c := range []struct{ raw, id, location string }{
		{"/v1/projects/c%3Fx%3D1", "c?x=1", "/v1/projects/c%3Fx=1"},
		{"/v1/projects/a%20b%23c%25", "a b#c%", "/v1/projects/a%20b%23c%25"},
		{"/v1/projects/%C3%A4", "ä", "/v1/projects/%C3%A4"},
	} {
		r := s.do(t, req{method: http.MethodPut, path: c.raw, key: admin, body: `{}`})
		wantStatus(t, r, http.StatusCreated)
		if got := r.header.Get("Location"); got != c.location {
			t.Errorf("PUT %s: Location %q, want %q", c.raw, got, c.location)
		}
		if p := decode[projectBody](t, r); p.ProjectID != c.id {
			t.Errorf("PUT %s stored %q, want %q", c.raw, p.ProjectID, c.id)
		}
		got := s.do(t, req{method: http.MethodGet, path: r.header.Get("Location"), key: admin})
		if got.status != http.StatusOK || decode[projectBody](t, got).ProjectID != c.id {
			t.Errorf("GET of Location %s: %d %s", r.header.Get("Location"), got.status, got.body)
		}
	}
	refs := `["x://l"]`
	sum := sha256.Sum256([]byte(refs))
	r := s.do(t, req{method: http.MethodPut, path: "/v1/releases/r%3F1/adapters/v%201", key: runtime,
		body: fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)})
	wantStatus(t, r, http.StatusCreated)
	if got := r.header.Get("Location"); got != "/v1/releases/r%3F1/adapters/v%201" {
		t.Fatalf("release Location %q", got)
	}
}

func TestRequestIDIsKeptOnlyWhenSafe(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	s := newStack(t, app.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	cases := []struct {
		id   string
		kept bool
	}{
		{"abc-123", true},
		{"A.b_c:d-9", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"has space", false},
		{"semi;colon", false},
		{"new\\nline", false},
		{"é", false},
		{`"quoted"`, false},
		{"a/b", false},
	}
	for _, c := range cases {
		// A problem (401) carries the id as its instance.
		r := s.do(t, req{method: http.MethodGet, path: "/v1/runs", header: map[string]string{"X-Request-Id": c.id}})
		p := wantProblem(t, r, http.StatusUnauthorized, "unauthorized")
		got := r.header.Get("X-Request-Id")
		if c.kept != (got == c.id) {
			t.Errorf("X-Request-Id %q answered %q (kept: want %v)", c.id, got, c.kept)
		}
		if !c.kept {
			if _, err := uuid.Parse(got); err != nil {
				t.Errorf("X-Request-Id %q replaced by %q, not a fresh UUID", c.id, got)
			}
		}
		if p.Instance != got {
			t.Errorf("instance %q, header %q", p.Instance, got)
		}
		if !strings.Contains(logs.String(), `"request_id":"`+got+`"`) {
			t.Errorf("the log does not carry request id %q", got)
		}
		if !c.kept && strings.Contains(logs.String(), c.id) {
			t.Errorf("the log carries the refused id %q", c.id)
		}
	}
}

// TestStrictJSONOverHTTP: member names match exactly (nested ones too), duplicates are
// refused, one 400 names every bad field, and a refused request writes nothing.
func TestStrictJSONOverHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	tenant, admin, runtime := s.tenantKeys(t)
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/p1", key: admin}), http.StatusCreated)
	enq := func(extra string) string {
		return fmt.Sprintf(`{"subject":"s","kind":"k","projectId":"p1","agentId":"a","stepId":%q,"snapshotId":%q%s}`,
			uuid.NewString(), uuid.NewString(), extra)
	}
	cases := []struct {
		name, path, body string
		fields           map[string]string
	}{
		{"SecondSpellingOfAMember", "/v1/runs", enq(`,"Subject":"b"`), map[string]string{"Subject": "not a known field"}},
		{"DuplicateMember", "/v1/runs", enq(`,"subject":"b"`), map[string]string{"subject": "more than once"}},
		{"DuplicateInsideInput", "/v1/runs", enq(`,"input":{"a":{"b":1,"b":2}}`), map[string]string{"input.a.b": "more than once"}},
		{"EveryFieldAtOnce", "/v1/runs",
			`{"subject":"","kind":"k","projectId":"p1","agentId":"a","stepId":"x","snapshotId":"` + uuid.NewString() + `","dueAt":"tomorrow","maxAttempts":"3","extra":true,"band":"fast"}`,
			map[string]string{"subject": "", "stepId": "UUID", "dueAt": "RFC 3339", "maxAttempts": "integer", "extra": "not a known field", "band": ""}},
		{"TimeOutsideRange", "/v1/runs", enq(`,"dueAt":"9999-12-31T23:59:59-05:00"`), map[string]string{"dueAt": "0001-01-01..9999-12-31"}},
		{"TimeBeforeYearOne", "/v1/runs", enq(`,"dueAt":"0001-01-01T00:00:00+00:30"`), map[string]string{"dueAt": "0001-01-01..9999-12-31"}},
		{"UpperCaseToken", "/v1/runs/claim", `{"HOLDERID":"h","holderId":"h","releaseId":"r","adapterVersion":"1","modelProfileId":"m"}`,
			map[string]string{"HOLDERID": "not a known field"}},
		{"NestedChildExactNames", "", "", nil}, // filled below with a lease
	}
	l := newLease(t, s, admin, runtime)
	cases[len(cases)-1] = struct {
		name, path, body string
		fields           map[string]string
	}{"NestedChildExactNames", "/v1/attempts/" + l.attempt + "/delegations",
		fmt.Sprintf(`{"fencingToken":%d,"purpose":"p","child":{"Subject":"x","subject":"y","subject":"z","kind":"k","projectId":"p1","agentId":"c","stepId":%q,"snapshotId":%q}}`,
			l.token, uuid.NewString(), uuid.NewString()),
		map[string]string{"child.Subject": "not a known field", "child.subject": "more than once"}}
	for _, c := range cases {
		runsBefore := s.rows(t, "Runs", tenant)
		p := wantProblem(t, s.do(t, req{method: http.MethodPost, path: c.path, key: runtime, body: c.body}), http.StatusBadRequest, "invalid_request")
		if len(p.Errors) != len(c.fields) {
			t.Errorf("%s: errors %+v, want exactly %v", c.name, p.Errors, c.fields)
		}
		for f, frag := range c.fields {
			if !hasField(p, f, frag) {
				t.Errorf("%s: errors %+v do not say %s %q", c.name, p.Errors, f, frag)
			}
		}
		if n := s.rows(t, "Runs", tenant); n != runsBefore {
			t.Errorf("%s: a refused request wrote runs (%d, was %d)", c.name, n, runsBefore)
		}
	}
}

// lease is a claimed run of a fresh subject.
type lease struct {
	run, attempt string
	token        int64
}

func newLease(t *testing.T, s *stack, admin, runtime string) lease {
	t.Helper()
	refs := `["x://lease"]`
	sum := sha256.Sum256([]byte(refs))
	rel := "rel-" + uuid.NewString()
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/releases/" + rel + "/adapters/1", key: runtime,
		body: fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)}), http.StatusCreated)
	subject := "lease-" + uuid.NewString()
	r := s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: fmt.Sprintf(
		`{"subject":%q,"kind":%q,"projectId":"p1","agentId":"a","stepId":%q,"snapshotId":%q}`, subject, subject, uuid.NewString(), uuid.NewString())})
	wantStatus(t, r, http.StatusCreated)
	r = s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: runtime, body: fmt.Sprintf(
		`{"holderId":"h","releaseId":%q,"adapterVersion":"1","modelProfileId":"m","leaseSeconds":3600,"kinds":[%q]}`, rel, subject)})
	wantStatus(t, r, http.StatusOK)
	cl := decode[claimWire](t, r)
	return lease{run: cl.Run.RunID, attempt: cl.Attempt.AttemptID, token: cl.Lease.FencingToken}
}

// claimWire is the part of a claim's answer the tests use.
type claimWire struct {
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

// rows counts the tenant's rows of a table.
func (s *stack) rows(t *testing.T, table, tenant string) int {
	t.Helper()
	return countRows(t, s.db, table, tenant)
}

// TestIdentifierRuleEverywhere: one rule for identifiers in paths, query filters and
// bodies (DESIGN.md 7a).
func TestIdentifierRuleEverywhere(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	tenant, admin, runtime := s.tenantKeys(t)
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/p1", key: admin}), http.StatusCreated)
	bad := []struct{ name, raw, escaped string }{
		{"LeadingSpace", " p", "%20p"},
		{"TrailingSpace", "p ", "p%20"},
		{"TrailingTab", "p\t", "p%09"},
		{"NoBreakSpace", "p\u00a0", "p%C2%A0"},
		{"Dot", ".", "."},
		{"DotDot", "..", ".."},
		{"Control", "p\u0001q", "p%01q"},
		{"C1Control", "p\u0085q", "p%C2%85q"},
		{"Empty", "", ""},
		// Invisible code points (issue 17 item 7): each would make a second "p" that looks
		// like the first.
		{"ZeroWidthSpaceAfter", "p\u200b", "p%E2%80%8B"},
		{"ZeroWidthSpaceBefore", "\u200bp", "%E2%80%8Bp"},
		{"ByteOrderMark", "p\ufeff", "p%EF%BB%BF"},
		{"BidiOverride", "p\u202eq", "p%E2%80%AEq"},
		{"BidiIsolate", "p\u2066q", "p%E2%81%A6q"},
		{"ZeroWidthJoiner", "p\u200dq", "p%E2%80%8Dq"},
		{"SoftHyphen", "p\u00adq", "p%C2%ADq"},
		{"TagCharacter", "p\U000E0041", "p%F3%A0%81%81"},
		{"HangulFiller", "p\u3164", "p%E3%85%A4"},
		{"CombiningGraphemeJoiner", "p\u034fq", "p%CD%8Fq"},
		{"VariationSelector", "p\ufe0f", "p%EF%B8%8F"},
		{"LineSeparator", "p\u2028q", "p%E2%80%A8q"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if c.raw != "" && c.raw != "." && c.raw != ".." {
				// Path segment (project id).
				r := s.do(t, req{method: http.MethodPut, path: "/v1/projects/" + c.escaped, key: admin, body: `{}`})
				if p := wantProblem(t, r, http.StatusBadRequest, "invalid_request"); !hasField(p, "projectId", "") {
					t.Errorf("path %q: %+v", c.raw, p.Errors)
				}
			}
			// Query filter.
			if c.raw != "" {
				r := s.do(t, req{method: http.MethodGet, path: "/v1/runs?subject=" + strings.ReplaceAll(c.escaped, ".", "%2E"), key: admin})
				if p := wantProblem(t, r, http.StatusBadRequest, "invalid_request"); !hasField(p, "subject", "") {
					t.Errorf("query %q: %+v", c.raw, p.Errors)
				}
			}
			// Body fields.
			for _, field := range []string{"subject", "kind", "agentId", "idempotencyKey", "projectId"} {
				fields := map[string]string{"subject": "s", "kind": "k", "agentId": "a", "projectId": "p1", field: c.raw}
				body, _ := json.Marshal(map[string]any{
					"subject": fields["subject"], "kind": fields["kind"], "agentId": fields["agentId"], "projectId": fields["projectId"],
					"idempotencyKey": fields["idempotencyKey"] + "k", "stepId": uuid.NewString(), "snapshotId": uuid.NewString(),
				})
				if field == "idempotencyKey" {
					body, _ = json.Marshal(map[string]any{"subject": "s", "kind": "k", "agentId": "a", "projectId": "p1",
						"idempotencyKey": c.raw, "stepId": uuid.NewString(), "snapshotId": uuid.NewString()})
				}
				r := s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: string(body)})
				if p := wantProblem(t, r, http.StatusBadRequest, "invalid_request"); !hasField(p, field, "") {
					t.Errorf("body %s %q: %+v", field, c.raw, p.Errors)
				}
			}
		})
	}
	// "/" is refused where the identifier is a path segment, and only there.
	slash := func(field, v string) string {
		m := map[string]any{"subject": "s/1", "kind": "k/1", "agentId": "a", "projectId": "p1", "idempotencyKey": "i/" + uuid.NewString(),
			"stepId": uuid.NewString(), "snapshotId": uuid.NewString()}
		m[field] = v
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, f := range []string{"agentId", "projectId"} {
		p := wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: slash(f, "x/y")}), http.StatusBadRequest, "invalid_request")
		if !hasField(p, f, `"/"`) {
			t.Errorf("body %s with /: %+v", f, p.Errors)
		}
	}
	wantStatus(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: slash("subject", "s/2")}), http.StatusCreated)
	for _, p := range []string{"/v1/projects/a%2Fb", "/v1/locks/agents/a%2Fb/tasks/t", "/v1/locks/agents/a/tasks/t%2Fu"} {
		method, body := http.MethodPut, `{"holderId":"h","ttlSeconds":10}`
		if strings.HasPrefix(p, "/v1/projects") {
			body = `{}`
		}
		wantProblem(t, s.do(t, req{method: method, path: p, key: map[bool]string{true: admin, false: runtime}[strings.HasPrefix(p, "/v1/projects")], body: body}),
			http.StatusBadRequest, "invalid_request")
	}
	claim := `{"holderId":"h","releaseId":"r/1","adapterVersion":"1/2","modelProfileId":"m","projectIds":["a/b"],"agentIds":["c/d"]}`
	p := wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: runtime, body: claim}), http.StatusBadRequest, "invalid_request")
	for _, f := range []string{"releaseId", "adapterVersion", "projectIds[0]", "agentIds[0]"} {
		if !hasField(p, f, `"/"`) {
			t.Errorf("claim %s with /: %+v", f, p.Errors)
		}
	}
	if n := s.rows(t, "Projects", tenant); n != 1 {
		t.Fatalf("refused requests made projects: %d", n)
	}
}

// TestRangesOfFeedsCursorsAndTimeFilters: values outside what the service makes are 400,
// never a silent restart or a 500.
func TestRangesOfFeedsCursorsAndTimeFilters(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	cursor := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	cases := []struct{ name, path, field string }{
		{"ChangedSincePastBigint", "/v1/attempts?changedSince=ffffffffffffffff", "changedSince"},
		{"ChangedSinceQuotedPastBigint", `/v1/attempts?changedSince=%228000000000000000%22`, "changedSince"},
		{"FeedCursorPastBigint", "/v1/attempts?cursor=" + cursor(map[string]any{"v": uint64(1 << 63), "i": uuid.NewString()}), "cursor"},
		{"ListCursorTimeAfter9999", "/v1/attempts?cursor=" + cursor(map[string]any{"t": "9999-12-31T23:59:59-05:00", "i": uuid.NewString()}), "cursor"},
		{"RunCursorTimeBeforeYearOne", "/v1/runs?cursor=" + cursor(map[string]any{"q": "0001-01-01T00:00:00+01:00", "r": uuid.NewString()}), "cursor"},
		{"StartedFromPast9999", "/v1/attempts?startedFrom=9999-12-31T23:59:59-05:00", "startedFrom"},
		{"StartedToNotATime", "/v1/attempts?startedTo=yesterday", "startedTo"},
		{"StartedFromWithoutZone", "/v1/attempts?startedFrom=2026-01-01T00:00:00", "startedFrom"},
		{"EndedCursorTimeAfter9999", "/v1/attempts?endedFrom=2026-01-01T00:00:00Z&cursor=" + cursor(map[string]any{"e": "9999-12-31T23:59:59-05:00", "i": uuid.NewString()}), "cursor"},
		{"EndedFromPast9999", "/v1/attempts?endedFrom=9999-12-31T23:59:59-05:00", "endedFrom"},
		{"EndedToWithoutZone", "/v1/attempts?endedTo=2026-01-01T00:00:00", "endedTo"},
		{"RunAttemptsMinNegative", "/v1/runs?attemptsMin=-1", "attemptsMin"},
		{"CallsCursorTimeAfter9999", "/v1/calls?cursor=" + cursor(map[string]any{"t": "9999-12-31T23:59:59-05:00", "i": uuid.NewString()}), "cursor"},
		{"CallsEndedFromPast9999", "/v1/calls?endedFrom=9999-12-31T23:59:59-05:00", "endedFrom"},
		{"CallsStartedToWithoutZone", "/v1/calls?startedTo=2026-01-01T00:00:00", "startedTo"},
	}
	for _, c := range cases {
		p := wantProblem(t, s.do(t, req{method: http.MethodGet, path: c.path, key: w.admin}), http.StatusBadRequest, "invalid_request")
		if !hasField(p, c.field, "") {
			t.Errorf("%s: %+v", c.name, p.Errors)
		}
	}
	// The largest version the service can make is still a valid feed position.
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/v1/attempts?changedSince=7fffffffffffffff", key: w.admin}), http.StatusOK)

	// Time filters compare instants: the attempt's start written with another offset is
	// the same instant.
	att := decode[struct {
		StartedAt string `json:"startedAt"`
	}](t, s.do(t, req{method: http.MethodGet, path: "/v1/attempts/" + w.values["attemptId"], key: w.admin}))
	started, err := time.Parse(time.RFC3339Nano, att.StartedAt)
	if err != nil {
		t.Fatal(err)
	}
	fixedZone := func(secs int) *time.Location { return time.FixedZone("", secs) }
	urlEscape := url.QueryEscape
	east := started.In(fixedZone(14 * 3600)).Format("2006-01-02T15:04:05.000-07:00")
	west := started.In(fixedZone(-12 * 3600)).Format("2006-01-02T15:04:05.000-07:00")
	for _, c := range []struct {
		q    string
		want int
	}{
		{"startedFrom=" + urlEscape(east), 1}, // inclusive, same instant
		{"startedFrom=" + urlEscape(west), 1},
		{"startedTo=" + urlEscape(east), 0}, // exclusive
		{"startedTo=" + urlEscape(started.Add(1e6).In(fixedZone(14*3600)).Format("2006-01-02T15:04:05.000-07:00")), 1},
		{"startedFrom=" + urlEscape(started.Add(1e6).In(fixedZone(-12*3600)).Format("2006-01-02T15:04:05.000-07:00")), 0},
	} {
		r := s.do(t, req{method: http.MethodGet, path: "/v1/attempts?" + c.q, key: w.admin})
		wantStatus(t, r, http.StatusOK)
		page := decode[struct {
			Items []json.RawMessage `json:"items"`
		}](t, r)
		if len(page.Items) != c.want {
			t.Errorf("?%s: %d attempts, want %d (started %s)", c.q, len(page.Items), c.want, att.StartedAt)
		}
	}
}

// TestIfMatchForms: "*" matches any existing resource, a list matches when one tag is
// current, a weak tag never matches; the same on every route that takes If-Match.
func TestIfMatchForms(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	other := `"00000000000000ff"`
	type target struct {
		name, path, key string
		body            func(i int) string
	}
	refs := `["x://w"]`
	sum := sha256.Sum256([]byte(refs))
	releaseStates := []string{"draining", "active"}
	targets := []target{
		{"Project", "/v1/projects/w-proj", w.admin, func(i int) string { return fmt.Sprintf(`{"retentionDays":%d}`, 10+i) }},
		{"Release", "/v1/releases/w-rel/adapters/1.0", w.admin, func(i int) string {
			return fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":%q}`, hex.EncodeToString(sum[:]), refs, releaseStates[i%2])
		}},
	}
	for _, tg := range targets {
		etag := func() string {
			r := s.do(t, req{method: http.MethodGet, path: tg.path, key: tg.key})
			wantStatus(t, r, http.StatusOK)
			return r.header.Get("ETag")
		}
		i := 0
		put := func(ifMatch string) response {
			i++
			return s.do(t, req{method: http.MethodPut, path: tg.path, key: tg.key, body: tg.body(i), header: map[string]string{"If-Match": ifMatch}})
		}
		for _, c := range []struct {
			ifMatch func(cur string) string
			status  int
		}{
			{func(cur string) string { return "W/" + cur }, http.StatusPreconditionFailed},
			{func(cur string) string { return other + ", W/" + cur }, http.StatusPreconditionFailed},
			{func(cur string) string { return other }, http.StatusPreconditionFailed},
			{func(cur string) string { return "*" }, http.StatusOK},
			{func(cur string) string { return other + ", " + cur }, http.StatusOK},
			{func(cur string) string { return cur + "," + other }, http.StatusOK},
		} {
			cur := etag()
			h := c.ifMatch(cur)
			r := put(h)
			if r.status != c.status {
				t.Errorf("%s If-Match %s: %d %s, want %d", tg.name, h, r.status, r.body, c.status)
			}
			if c.status == http.StatusPreconditionFailed {
				wantProblem(t, r, c.status, "precondition_failed")
				if etag() != cur {
					t.Errorf("%s: a refused update changed the ETag", tg.name)
				}
			}
		}
	}
	// If-Match: * on a project that does not exist is 412 (no current representation),
	// not a create.
	wantProblem(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/w-none", key: w.admin, body: `{}`, header: map[string]string{"If-Match": "*"}}),
		http.StatusPreconditionFailed, "precondition_failed")

	// A decision's answer (If-Match required) and a call's finish (optional).
	dec := "/v1/decisions/" + w.values["decisionId"]
	wantProblem(t, s.do(t, req{method: http.MethodPost, path: dec + "/answer", key: w.admin, body: `{"status":"approved"}`,
		header: map[string]string{"If-Match": "W/" + s.do(t, req{method: http.MethodGet, path: dec, key: w.admin}).header.Get("ETag")}}),
		http.StatusPreconditionFailed, "precondition_failed")
	wantStatus(t, s.do(t, req{method: http.MethodPost, path: dec + "/answer", key: w.admin, body: `{"status":"approved"}`,
		header: map[string]string{"If-Match": "*"}}), http.StatusOK)
	call := "/v1/attempts/" + w.values["attemptId"] + "/calls/" + w.values["callId"]
	cur := s.do(t, req{method: http.MethodGet, path: call, key: w.admin}).header.Get("ETag")
	wantProblem(t, s.do(t, req{method: http.MethodPatch, path: call, key: w.runtime, body: fmt.Sprintf(`{"fencingToken":%s,"status":"succeeded"}`, w.token),
		header: map[string]string{"If-Match": other}}), http.StatusPreconditionFailed, "precondition_failed")
	wantStatus(t, s.do(t, req{method: http.MethodPatch, path: call, key: w.runtime, body: fmt.Sprintf(`{"fencingToken":%s,"status":"succeeded"}`, w.token),
		header: map[string]string{"If-Match": other + ", " + cur}}), http.StatusOK)
}

// countRows counts the tenant's rows of a table, past row-level scoping.
func countRows(t *testing.T, db *sqldb.DB, table, tenant string) int {
	t.Helper()
	var n int
	err := db.Read(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(context.Background(), &n, tx.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE TenantId = ?`), tenant)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
