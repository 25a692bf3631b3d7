package openapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/strictjson"
	"github.com/ledger-dev/ledger/internal/web"
)

// newTestServer is a server whose every route admits every request.
func newTestServer() *web.Server {
	s := web.New(web.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	s.SetAuth(func(...string) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	})
	return s
}

// docJSON round-trips the document through JSON, as clients see it.
func docJSON(t *testing.T, s *web.Server) map[string]any {
	t.Helper()
	b, err := json.Marshal(Document(s))
	if err != nil {
		t.Fatalf("the OpenAPI document does not marshal: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func dig(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %q in %v", k, v)
		}
		v = m[k]
	}
	return v
}

func TestOpenAPISchemas(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Route(http.MethodGet, "/v1/runs", web.Op{ID: "listRuns", Tag: "Runs", Summary: "list", Status: http.StatusOK,
		Response: api.Page[api.Run]{}, Query: api.ListRunsParams{}}, nil)
	s.Route(http.MethodPut, "/v1/projects/:projectId", web.Op{ID: "putProject", Tag: "Projects", Summary: "put", Status: http.StatusOK,
		AlsoStatus: []int{http.StatusCreated}, Body: api.PutProjectRequest{}, Response: api.Project{}, ETag: true, IfMatch: ifmatch.ToUpdate,
		Roles: []string{"admin"}}, nil)
	s.Route(http.MethodPost, "/v1/runs/claim", web.Op{ID: "claimRun", Tag: "Runs", Summary: "claim", Status: http.StatusOK,
		AlsoStatus: []int{http.StatusNoContent}, Body: api.ClaimRequest{}, Response: api.Claim{}, RetryAfter: true}, nil)
	doc := docJSON(t, s)
	schemas := dig(t, doc, "components", "schemas").(map[string]any)

	// Problem lists its field errors through a component of their own.
	if ref := dig(t, schemas, "Problem", "properties", "errors", "items", "$ref"); ref != "#/components/schemas/FieldError" || schemas["FieldError"] == nil {
		t.Fatalf("Problem.errors items: %v", ref)
	}
	// A generic page gets a name OpenAPI allows.
	if _, ok := schemas["RunPage"]; !ok {
		t.Fatalf("generic page schema not named RunPage: %v", keysOf(schemas))
	}
	run := schemas["Run"].(map[string]any)
	if run["additionalProperties"] != false {
		t.Fatalf("Run allows undeclared members: %v", run["additionalProperties"])
	}
	required := fmt.Sprint(run["required"])
	for _, want := range []string{"runId", "attemptsSpent", "parentRunId", "input", "queuedAt"} {
		if !strings.Contains(required, want) {
			t.Errorf("Run does not require %s: %s", want, required)
		}
	}
	for _, optional := range []string{"holderId", "leasedUntil", "outcome", "purged"} {
		if strings.Contains(required, " "+optional) || strings.Contains(required, "["+optional) {
			t.Errorf("Run requires the optional %s: %s", optional, required)
		}
	}
	// An id that is always sent but may be absent is a nullable UUID; a time is a date-time.
	if p := dig(t, run, "properties", "parentRunId").(map[string]any); fmt.Sprint(p["type"]) != "[string null]" || p["format"] != "uuid" {
		t.Fatalf("parentRunId schema %v", p)
	}
	if f := dig(t, run, "properties", "queuedAt", "format"); f != "date-time" {
		t.Fatalf("queuedAt format %v", f)
	}
	if ref := dig(t, run, "properties", "state", "$ref"); ref != "#/components/schemas/RunState" ||
		fmt.Sprint(dig(t, schemas, "RunState", "enum")) != "[queued leased ended]" {
		t.Fatalf("state: %v %v", ref, schemas["RunState"])
	}
	// Bounds and defaults come from the validate and default tags.
	days := dig(t, schemas, "PutProjectRequest", "properties", "retentionDays").(map[string]any)
	if days["minimum"] != float64(1) || days["maximum"] != float64(36500) || days["default"] != float64(365) {
		t.Fatalf("retentionDays schema %v", days)
	}
	kinds := dig(t, schemas, "ClaimRequest", "properties", "kinds").(map[string]any)
	if kinds["maxItems"] != float64(100) || dig(t, kinds, "items", "maxLength") != float64(64) || dig(t, kinds, "items", "minLength") != float64(1) {
		t.Fatalf("kinds schema %v", kinds)
	}
	if r := fmt.Sprint(dig(t, schemas, "ClaimRequest", "required")); r != "[adapterVersion holderId modelProfileId releaseId]" {
		t.Fatalf("claim requires %s", r)
	}
	var limit map[string]any
	for _, p := range dig(t, doc, "paths", "/v1/runs", "get", "parameters").([]any) {
		if p.(map[string]any)["name"] == "limit" {
			limit = p.(map[string]any)["schema"].(map[string]any)
		}
	}
	if limit["minimum"] != float64(1) || limit["maximum"] != float64(500) || limit["default"] != float64(50) {
		t.Fatalf("limit schema %v", limit)
	}

	put := dig(t, doc, "paths", "/v1/projects/{projectId}", "put").(map[string]any)
	responses := put["responses"].(map[string]any)
	for _, st := range []string{"200", "201", "400", "401", "403", "412", "413", "429", "500", "503"} {
		if responses[st] == nil {
			t.Errorf("PUT does not document %s: %v", st, keysOf(responses))
		}
	}
	if dig(t, responses, "201", "headers", "Location") == nil || dig(t, responses, "201", "headers", "ETag") == nil {
		t.Errorf("201 lacks Location or ETag: %v", responses["201"])
	}
	if codes := fmt.Sprint(dig(t, responses, "412", "x-problem-codes")); codes != "[precondition_failed]" {
		t.Errorf("412 lists the codes %s", codes)
	}
	claim := dig(t, doc, "paths", "/v1/runs/claim", "post", "responses").(map[string]any)
	if dig(t, claim, "204", "headers", "Retry-After") == nil || dig(t, claim, "429", "headers", "Retry-After", "required") != true {
		t.Errorf("claim's Retry-After: %v", claim)
	}
}

// A member whose tag names one of api's limits (api.LimitTags) is documented with the
// limit's number as its maxLength.
func TestOpenAPIStatesLimitTags(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/delegations", web.Op{ID: "delegate", Tag: "Delegations", Summary: "delegate",
		Status: http.StatusCreated, Body: api.DelegationRequest{}, Response: api.Delegation{}}, nil)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/decisions", web.Op{ID: "ask", Tag: "Decisions", Summary: "ask",
		Status: http.StatusCreated, Body: api.DecisionRequest{}, Response: api.Decision{}}, nil)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/release", web.Op{ID: "release", Tag: "Runs", Summary: "release",
		Status: http.StatusOK, Body: api.ReleaseAttemptRequest{}, Response: api.Attempt{}}, nil)
	schemas := dig(t, docJSON(t, s), "components", "schemas").(map[string]any)
	for _, c := range []struct {
		path []string
		want int
	}{
		{[]string{"DelegationRequest", "properties", "purpose", "maxLength"}, api.MaxPurpose},
		{[]string{"DecisionRequest", "properties", "recommendation", "maxLength"}, api.MaxRecommendation},
		{[]string{"AttemptError", "properties", "message", "maxLength"}, api.MaxErrorMessage},
	} {
		if got := dig(t, schemas, c.path...); got != float64(c.want) {
			t.Errorf("%v = %v, want %d", c.path, got, c.want)
		}
	}
}

func TestOpenAPIDocumentsOnlyTheWireTypes(t *testing.T) {
	t.Parallel()
	type local struct {
		A string `json:"a"`
	}
	s := newTestServer()
	s.Route(http.MethodGet, "/a", web.Op{ID: "a", Tag: "System", Summary: "a", Public: true, Status: http.StatusOK, Response: local{}}, nil)
	defer func() {
		if recover() == nil {
			t.Fatal("a response type outside the api package was documented")
		}
	}()
	Document(s)
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOpenAPIDocumentIsBuiltOnce: GET /openapi.json answers from a cache built once per set
// of routes, and a route registered after a GET is in the next answer.
func TestOpenAPIDocumentIsBuiltOnce(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	c := route(s)
	get := func(target string) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		s.Echo.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK || rec.Header().Get(echo.HeaderContentType) != echo.MIMEApplicationJSON {
			t.Fatalf("GET %s: %d %q", target, rec.Code, rec.Header().Get(echo.HeaderContentType))
		}
		return rec.Body.Bytes()
	}
	first, second := get("/openapi.json"), get("/openapi.json")
	want, err := json.Marshal(Document(s))
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(want)+"\n" || string(second) != string(first) || c.builds != 1 {
		t.Fatalf("two GETs: equal %v, as encoded %v, builds %d (want 1)", string(second) == string(first),
			string(first) == string(want)+"\n", c.builds)
	}
	s.Route(http.MethodGet, "/late", web.Op{ID: "late", Tag: "System", Summary: "late", Public: true, Status: http.StatusNoContent}, nil)
	if !strings.Contains(string(get("/openapi.json")), `"/late"`) || c.builds != 2 {
		t.Fatalf("a route added after the first GET is missing, or the document was not rebuilt (builds %d)", c.builds)
	}
}

// TestDocumentStatesTheNestingCap: the document's conventions name the decoder's cap.
func TestDocumentStatesTheNestingCap(t *testing.T) {
	t.Parallel()
	if want := fmt.Sprintf("A body nests at most %d levels", strictjson.MaxDepth); !strings.Contains(infoDescription, want) {
		t.Fatalf("the document's introduction does not say %q", want)
	}
}

// TestDatabaseRefusalIsDocumentedOnWrites: the code a refused write answers is in the
// document of every route that inserts or updates, and of no read or delete.
func TestDatabaseRefusalIsDocumentedOnWrites(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	for _, m := range methods {
		s.Route(m, "/v1/things", web.Op{ID: "thing" + m, Tag: "System", Summary: "t", Status: http.StatusNoContent}, nil)
	}
	code, _ := web.RefusedWrite(http.MethodPost)
	doc := docJSON(t, s)
	for _, m := range methods {
		listed := fmt.Sprint(docCodes(t, doc, m, code.Status()))
		want := m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch
		if got := strings.Contains(listed, string(code)); got != want {
			t.Errorf("%s lists %s: %v, want %v (codes %s)", m, code, got, want, listed)
		}
	}
}

// docCodes is the problem codes the document lists for /v1/things with method at status.
func docCodes(t *testing.T, doc map[string]any, method string, status int) any {
	t.Helper()
	r, ok := dig(t, doc, "paths", "/v1/things", strings.ToLower(method), "responses").(map[string]any)[strconv.Itoa(status)]
	if !ok {
		return nil
	}
	return r.(map[string]any)["x-problem-codes"]
}
