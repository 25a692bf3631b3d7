package app_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/app"
)

type openAPIDoc struct {
	OpenAPI string                          `json:"openapi"`
	Paths   map[string]map[string]openAPIOp `json:"paths"`
}

type openAPIOp struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
	Security    []map[string][]string      `json:"security"`
	Roles       []string                   `json:"x-roles"`
	Parameters  []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
	} `json:"parameters"`
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// publicOps are the routes that need no key (DESIGN.md section 7): exactly these four.
// HEAD answers wherever GET does, so each has its HEAD too.
var publicOps = []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json",
	"HEAD /healthz", "HEAD /readyz", "HEAD /metrics", "HEAD /openapi.json"}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// openAPIPath turns Echo's /v1/runs/:runId into OpenAPI's /v1/runs/{runId}.
func openAPIPath(p string) string { return echoParam.ReplaceAllString(p, "{$1}") }

// routeSet is every route Echo serves, as "METHOD /openapi/{path}", without Echo's own
// not-found routes.
func routeSet(e *echo.Echo) map[string]*echo.Route {
	out := map[string]*echo.Route{}
	for _, r := range e.Routes() {
		// The admin console's HTML pages (/ui) are not API operations: internal/console
		// tests them, sessions and CSRF included.
		if r.Method == echo.RouteNotFound || r.Path == "/ui" || strings.HasPrefix(r.Path, "/ui/") {
			continue
		}
		out[r.Method+" "+openAPIPath(r.Path)] = r
	}
	return out
}

func opSet(doc openAPIDoc) map[string]openAPIOp {
	out := map[string]openAPIOp{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			out[strings.ToUpper(method)+" "+path] = op
		}
	}
	return out
}

func fetchDoc(t *testing.T, s *stack) openAPIDoc {
	t.Helper()
	r := s.do(t, req{method: http.MethodGet, path: "/openapi.json"})
	wantStatus(t, r, http.StatusOK)
	return decode[openAPIDoc](t, r)
}

// TestOpenAPIDescribesEveryRoute keeps /openapi.json true: every route Echo serves is in
// it and nothing else is, every operation documents its answers, and what it says about
// keys is what the routes enforce. It walks the routes, so routes added later are covered.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	doc := fetchDoc(t, s)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	routes := routeSet(s.app.Server.Echo)
	ops := opSet(doc)
	if len(routes) < 7 {
		t.Fatalf("only %d routes registered: %v", len(routes), keys(routes))
	}
	for _, r := range keys(routes) {
		if _, ok := ops[r]; !ok {
			t.Errorf("route %s is not in /openapi.json", r)
		}
	}
	for _, o := range keys(ops) {
		if _, ok := routes[o]; !ok {
			t.Errorf("/openapi.json documents %s, which no route serves", o)
		}
	}

	opIDs := map[string]string{}
	for _, name := range keys(ops) {
		op := ops[name]
		if op.OperationID == "" {
			t.Errorf("%s has no operationId", name)
		} else if other, dup := opIDs[op.OperationID]; dup {
			t.Errorf("%s and %s share operationId %s", name, other, op.OperationID)
		}
		opIDs[op.OperationID] = name
		if len(op.Responses) == 0 {
			t.Errorf("%s documents no responses", name)
		}
		success := false
		for st := range op.Responses {
			if strings.HasPrefix(st, "2") {
				success = true
			}
		}
		if !success {
			t.Errorf("%s documents no success response: %v", name, keys(op.Responses))
		}
		_, path, _ := strings.Cut(name, " ")
		for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
			found := slices.ContainsFunc(op.Parameters, func(p struct {
				Name     string `json:"name"`
				In       string `json:"in"`
				Required bool   `json:"required"`
			}) bool {
				return p.Name == m[1] && p.In == "path" && p.Required
			})
			if !found {
				t.Errorf("%s does not declare its path parameter %s", name, m[1])
			}
		}
		public := slices.Contains(publicOps, name)
		switch {
		case public && len(op.Security) != 0:
			t.Errorf("%s is public but documents a security requirement", name)
		case !public && len(op.Security) == 0:
			t.Errorf("%s is not one of the public routes %v but documents no security requirement", name, publicOps)
		case !public && op.Responses["401"] == nil:
			t.Errorf("%s needs a key but does not document 401", name)
		case len(op.Roles) == 1 && op.Responses["403"] == nil:
			t.Errorf("%s is limited to %v but does not document 403", name, op.Roles)
		case len(op.Roles) != 1 && op.Responses["403"] != nil:
			t.Errorf("%s admits every role but documents 403", name)
		}
	}

	// Every $ref resolves, and component names are ones OpenAPI allows.
	var raw map[string]any
	if err := json.Unmarshal(s.do(t, req{method: http.MethodGet, path: "/openapi.json"}).body, &raw); err != nil {
		t.Fatal(err)
	}
	schemas, _ := raw["components"].(map[string]any)["schemas"].(map[string]any)
	validName := regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	for name, sch := range schemas {
		if !validName.MatchString(name) {
			t.Errorf("component schema name %q has characters OpenAPI does not allow", name)
		}
		if sch == nil {
			t.Errorf("component schema %q is empty", name)
		}
	}
	refs := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				var at any = raw
				for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, _ := at.(map[string]any)
					at = m[seg]
				}
				if !strings.HasPrefix(ref, "#/components/") || at == nil {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(raw)
	if refs == 0 {
		t.Error("the document has no $ref at all")
	}

	// What the document says about keys is what the routes do.
	for _, name := range keys(routes) {
		method, path, _ := strings.Cut(name, " ")
		path = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x")
		r := s.do(t, req{method: method, path: path})
		if slices.Contains(publicOps, name) {
			if r.status == http.StatusUnauthorized {
				t.Errorf("public route %s answered 401 without a key", name)
			}
			continue
		}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s without a key answered %d, want 401", name, r.status)
		}
	}
}

// checkStatusesDocumented reads the request counter of s (labelled by route and status) and
// checks that each status a route answered during the tests is documented for that route.
func checkStatusesDocumented(t *testing.T, s *stack) {
	t.Helper()
	ops := opSet(fetchDoc(t, s))
	routes := routeSet(s.app.Server.Echo)
	families, err := s.app.Server.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, mf := range families {
		if mf.GetName() != "ledger_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			name := l["method"] + " " + openAPIPath(l["route"])
			if _, ok := routes[name]; !ok {
				continue // unmatched paths (404 before routing)
			}
			checked++
			if op, ok := ops[name]; !ok || op.Responses[l["status"]] == nil {
				t.Errorf("%s answered %s, which /openapi.json does not document for it", name, l["status"])
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d route/status pairs observed: the check proves little", checked)
	}
}

// TestOpenAPIOperationsAreDocumented holds every operation of the served document to what a
// reader and a generator need: an operationId read as a method name, one declared tag, a
// summary and a description, an example per request body, Location on every 201, and
// problem responses that list their codes.
func TestOpenAPIOperationsAreDocumented(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	var doc struct {
		Info struct {
			License map[string]any `json:"license"`
		} `json:"info"`
		Servers []map[string]any `json:"servers"`
		Tags    []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
		Paths map[string]map[string]struct {
			OperationID string   `json:"operationId"`
			Tags        []string `json:"tags"`
			Summary     string   `json:"summary"`
			Description string   `json:"description"`
			RequestBody *struct {
				Content map[string]struct {
					Example json.RawMessage `json:"example"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
				Codes   []string       `json:"x-problem-codes"`
				Content map[string]any `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	r := s.do(t, req{method: http.MethodGet, path: "/openapi.json"})
	wantStatus(t, r, http.StatusOK)
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.License["name"] == nil || len(doc.Servers) == 0 {
		t.Errorf("info.license %v, servers %v", doc.Info.License, doc.Servers)
	}
	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		if tag.Description == "" {
			t.Errorf("tag %s has no description", tag.Name)
		}
		declared[tag.Name] = true
	}
	methodName := regexp.MustCompile(`^[a-z][A-Za-z]+$`)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			name := strings.ToUpper(method) + " " + path
			if !methodName.MatchString(op.OperationID) {
				t.Errorf("%s: operationId %q does not read as a method name", name, op.OperationID)
			}
			if len(op.Tags) != 1 || !declared[op.Tags[0]] {
				t.Errorf("%s: tags %v, want one declared tag", name, op.Tags)
			}
			if op.Summary == "" || op.Description == "" {
				t.Errorf("%s: summary %q, description %q", name, op.Summary, op.Description)
			}
			if op.RequestBody != nil && len(op.RequestBody.Content["application/json"].Example) == 0 {
				t.Errorf("%s: the request body has no example", name)
			}
			for st, resp := range op.Responses {
				if st == "201" && resp.Headers["Location"] == nil {
					t.Errorf("%s: 201 without Location", name)
				}
				if st >= "400" && method != "head" && (len(resp.Codes) == 0 || resp.Content["application/problem+json"] == nil) {
					t.Errorf("%s: %s lists no problem codes or no problem document", name, st)
				}
			}
		}
	}
}
