package web

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Two types with one name, as two packages may have (history.Decision, decisions.Decision).
type shape struct {
	ID   uuid.UUID     `json:"id"`
	Ref  uuid.NullUUID `json:"ref"`
	When time.Time     `json:"when"`
}

type item struct {
	Name string `json:"name"`
}

func newTestServer() *Server {
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	s.SetAuth(func(roles ...string) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	})
	return s
}

// docJSON round-trips the document through JSON, as clients see it.
func docJSON(t *testing.T, s *Server) map[string]any {
	t.Helper()
	b, err := json.Marshal(s.OpenAPI())
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
	s.Route(http.MethodGet, "/v1/items", Op{Summary: "list", Status: http.StatusOK, Response: Page[item]{}}, nil)
	s.Route(http.MethodPut, "/v1/items/:itemId", Op{Summary: "put", Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated},
		Body: shape{}, Response: shape{}, ETag: true, IfMatch: true}, nil)
	doc := docJSON(t, s)
	schemas := dig(t, doc, "components", "schemas").(map[string]any)

	// Problem lists its field errors through a component of their own.
	if ref := dig(t, schemas, "Problem", "properties", "errors", "items", "$ref"); ref != "#/components/schemas/FieldError" || schemas["FieldError"] == nil {
		t.Fatalf("Problem.errors items: %v", ref)
	}
	// A generic page gets a name OpenAPI allows.
	if _, ok := schemas["Page_item"]; !ok {
		t.Fatalf("generic page schema not named Page_item: %v", keysOf(schemas))
	}
	for name := range schemas {
		if strings.ContainsAny(name, "[]/ ") {
			t.Fatalf("schema name %q", name)
		}
	}
	// uuid.NullUUID is a UUID string or null on the wire, not {UUID, Valid}.
	ref := dig(t, schemas, "shape", "properties", "ref").(map[string]any)
	if ref["format"] != "uuid" || ref["properties"] != nil {
		t.Fatalf("NullUUID schema %v", ref)
	}
	if id := dig(t, schemas, "shape", "properties", "id", "format"); id != "uuid" {
		t.Fatalf("UUID schema format %v", id)
	}
	if when := dig(t, schemas, "shape", "properties", "when", "format"); when != "date-time" {
		t.Fatalf("time schema format %v", when)
	}

	put := dig(t, doc, "paths", "/v1/items/{itemId}", "put").(map[string]any)
	responses := put["responses"].(map[string]any)
	for _, st := range []string{"200", "201", "400", "401", "412", "413"} {
		if responses[st] == nil {
			t.Errorf("PUT does not document %s: %v", st, keysOf(responses))
		}
	}
	if dig(t, responses, "201", "headers", "Location") == nil || dig(t, responses, "201", "headers", "ETag") == nil {
		t.Errorf("201 lacks Location or ETag: %v", responses["201"])
	}
}

func TestOpenAPISameNameDifferentShapes(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	type twin struct {
		A string `json:"a"`
	}
	first := twin{}
	s.Route(http.MethodGet, "/a", Op{Summary: "a", Status: http.StatusOK, Response: first}, nil)
	// A second, differently shaped type of the same Go name, from another scope.
	s.Route(http.MethodGet, "/b", Op{Summary: "b", Status: http.StatusOK, Response: func() any {
		type twin struct {
			B int `json:"b"`
		}
		return twin{}
	}()}, nil)
	doc := docJSON(t, s)
	refA := dig(t, doc, "paths", "/a", "get", "responses", "200", "content", "application/json", "schema", "$ref")
	refB := dig(t, doc, "paths", "/b", "get", "responses", "200", "content", "application/json", "schema", "$ref")
	if refA == refB {
		t.Fatalf("two different types share the schema %v", refA)
	}
	schemas := dig(t, doc, "components", "schemas").(map[string]any)
	for _, ref := range []any{refA, refB} {
		name := strings.TrimPrefix(ref.(string), "#/components/schemas/")
		if schemas[name] == nil {
			t.Fatalf("%v does not resolve: %v", ref, keysOf(schemas))
		}
	}
	if dig(t, schemas, strings.TrimPrefix(refB.(string), "#/components/schemas/"), "properties", "b") == nil {
		t.Fatalf("the second type is described with the first's fields")
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestValidIdent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s    string
		max  int
		want bool
	}{
		{"a", 1, true},
		{"ab", 1, false},
		{"", 5, false},
		{"ééé", 3, true}, // runes, not bytes
		{"a b", 3, true},
		{"a\tb", 3, false},
		{"a\x7fb", 3, false},
		{"\U0001F600", 1, false}, // outside the BMP: two UTF-16 units, as nvarchar counts
		{"\U0001F600", 2, true},
		{string([]byte{0xff}), 3, false},
		{"Case", 4, true},
		{" a", 3, false},
		{"a ", 3, false},
		{"a\u00a0", 3, false}, // no-break space is white space too
		{".", 3, false},
		{"..", 3, false},
		{"...", 3, true},
		{"a/b", 3, true}, // only a path segment refuses "/"
		{"a\u0085b", 3, false},
	}
	for _, c := range cases {
		if got := ValidIdent(c.s, c.max); got != c.want {
			t.Errorf("ValidIdent(%q, %d) = %v, want %v", c.s, c.max, got, c.want)
		}
	}
}

func ctxFor(method, target, body string, header map[string]string) echo.Context {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	e := echo.New()
	e.Validator = NewValidator()
	return e.NewContext(req, httptest.NewRecorder())
}

func TestBind(t *testing.T) {
	t.Parallel()
	type body struct {
		Name  string `json:"name" validate:"required,ident=5"`
		Count *int   `json:"count" validate:"omitempty,min=1"`
	}
	cases := []struct {
		body     string
		optional bool
		field    string // "" with ok false means a non-field 400
		ok       bool
	}{
		{`{"name": "abc"}`, false, "", true},
		{`{"name": "abc", "count": 2}`, false, "", true},
		{``, false, "", false},
		{`   `, true, "name", false}, // empty optional body is {}, then validated
		{`{"name": "abcdef"}`, false, "name", false},
		{`{"name": "a", "count": 0}`, false, "count", false},
		{`{"name": "a", "extra": 1}`, false, "extra", false},
		{`{"name": 5}`, false, "name", false},
		{`{"name": "a"} {}`, false, "", false},
		{`{"name": "a"`, false, "", false},
		{`{name: "a"}`, false, "", false},
	}
	for _, c := range cases {
		var dst body
		err := Bind(ctxFor(http.MethodPost, "/", c.body, nil), &dst, c.optional)
		if c.ok {
			if err != nil {
				t.Errorf("Bind(%q) = %v", c.body, err)
			}
			continue
		}
		e, isApp := apperr.As(err)
		if !isApp || e.Code != apperr.Invalid {
			t.Errorf("Bind(%q) = %v, want invalid_request", c.body, err)
			continue
		}
		if c.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != c.field) {
			t.Errorf("Bind(%q) fields %+v, want %s", c.body, e.Fields, c.field)
		}
	}
}

func TestLimitCursorAndIfMatch(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]int{"": DefaultLimit, "limit=1": 1, "limit=500": MaxLimit, "limit=0": -1, "limit=501": -1, "limit=x": -1,
		"limit=1&limit=2": -1, "limits=3": -1} {
		var p api.PageParams
		err := BindQuery(ctxFor(http.MethodGet, "/?"+q, "", nil), &p)
		if n := LimitOf(p); (want < 0) != (err != nil) || (want > 0 && n != want) {
			t.Errorf("BindQuery(%q) = %d, %v", q, n, err)
		}
	}
	type pos struct {
		After string `json:"a"`
	}
	cur := EncodeCursor(pos{After: "x/y?z"})
	var got pos
	if ok, err := DecodeCursor(ctxFor(http.MethodGet, "/?cursor="+cur, "", nil), &got); !ok || err != nil || got.After != "x/y?z" {
		t.Fatalf("cursor round trip: %v %v %+v", ok, err, got)
	}
	if ok, err := DecodeCursor(ctxFor(http.MethodGet, "/", "", nil), &got); ok || err != nil {
		t.Fatalf("no cursor: %v %v", ok, err)
	}

	v := sqldb.RowVersion(42)
	other := sqldb.RowVersion(7)
	cases := []struct {
		header   string
		required bool
		code     apperr.Code
		matches  []sqldb.RowVersion // versions the condition accepts (of v and other)
	}{
		{"", false, "", nil},
		{"", true, apperr.PreconditionRequired, nil},
		{v.ETag(), true, "", []sqldb.RowVersion{v}},
		{`W/` + v.ETag(), false, apperr.PreconditionFailed, nil},
		{`"nonsense"`, false, apperr.PreconditionFailed, nil},
		{`*`, true, "", []sqldb.RowVersion{v, other}},
		{other.ETag() + ", " + v.ETag(), true, "", []sqldb.RowVersion{v, other}},
		{`W/` + other.ETag() + "," + v.ETag(), true, "", []sqldb.RowVersion{v}},
		{`"0000000000000063"`, true, "", nil},
	}
	for _, c := range cases {
		h := map[string]string{}
		if c.header != "" {
			h["If-Match"] = c.header
		}
		got, err := IfMatch(ctxFor(http.MethodPut, "/", "", h), c.required)
		if apperr.CodeOf(err) != c.code {
			t.Errorf("IfMatch(%q, required %v) = %v, want %q", c.header, c.required, err, c.code)
			continue
		}
		if (got != nil) != (c.header != "" && c.code == "") {
			t.Errorf("IfMatch(%q): condition %v", c.header, got)
			continue
		}
		for _, cur := range []sqldb.RowVersion{v, other} {
			want := slices.Contains(c.matches, cur)
			if got != nil && got.Matches(cur) != want {
				t.Errorf("IfMatch(%q).Matches(%d) = %v, want %v", c.header, cur, !want, want)
			}
		}
	}
}

type node struct {
	Name     string `json:"name"`
	Children []node `json:"children"`
	Parent   *node  `json:"parent,omitempty"`
}

func TestOpenAPIRecursiveTypes(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	// Used twice, so the second use meets the finished schema.
	s.Route(http.MethodGet, "/tree", Op{Summary: "tree", Status: http.StatusOK, Response: node{}}, nil)
	s.Route(http.MethodPut, "/tree", Op{Summary: "put tree", Status: http.StatusOK, Body: node{}, Response: node{}}, nil)
	doc := docJSON(t, s)
	if ref := dig(t, doc, "components", "schemas", "node", "properties", "children", "items", "$ref"); ref != "#/components/schemas/node" {
		t.Fatalf("recursive field: %v", ref)
	}
	b, _ := json.Marshal(doc)
	if strings.Contains(string(b), "x-go-type") || strings.Contains(string(b), "github.com/") {
		t.Fatalf("the served document carries Go type paths")
	}
}
