package web

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func newTestServer() *Server {
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	s.SetAuth(func(roles ...string) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	})
	return s
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
		if !isApp || e.Code != api.CodeInvalidRequest {
			t.Errorf("Bind(%q) = %v, want invalid_request", c.body, err)
			continue
		}
		if c.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != c.field) {
			t.Errorf("Bind(%q) fields %+v, want %s", c.body, e.Fields, c.field)
		}
	}
}

// TestBindReasons: the words a careless body gets for each field say what is wrong with
// what was sent, never a validator tag.
func TestBindReasons(t *testing.T) {
	t.Parallel()
	type body struct {
		Token int64     `json:"token" validate:"required,min=1"`
		Name  string    `json:"name" validate:"required,ident=5"`
		ID    uuid.UUID `json:"id" validate:"required"`
		Hash  string    `json:"hash" validate:"omitempty,len=4,hexadecimal"`
		Small *int32    `json:"small"`
	}
	cases := []struct {
		body string
		want map[string]string
	}{
		{`{}`, map[string]string{"token": "is required", "name": "is required", "id": "is required"}},
		{`{"token":0,"name":"","id":"00000000-0000-0000-0000-000000000000"}`, map[string]string{
			"token": "must not be 0", "name": "must not be empty", "id": "must not be the nil UUID"}},
		{`{"token":-1,"name":"a","id":"6f1c2b9e-3d4a-4c5b-9e8f-1a2b3c4d5e6f","hash":"abc"}`, map[string]string{
			"token": "must be at least 1", "hash": "must be 4 characters long"}},
		{`{"token":1,"name":"a","id":"6f1c2b9e-3d4a-4c5b-9e8f-1a2b3c4d5e6f","hash":"wxyz","small":2147483648}`, map[string]string{
			"hash": "must be hexadecimal digits", "small": "must be at most 2147483647"}},
	}
	for _, c := range cases {
		var dst body
		err := Bind(ctxFor(http.MethodPost, "/", c.body, nil), &dst, false)
		e, ok := apperr.As(err)
		if !ok || e.Code != api.CodeInvalidRequest {
			t.Fatalf("Bind(%s) = %v, want invalid_request", c.body, err)
		}
		got := map[string]string{}
		for _, f := range e.Fields {
			got[f.Field] = f.Reason
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Bind(%s) reasons %v, want %v", c.body, got, c.want)
		}
	}
}

// A limit tag (api.LimitTags) fails as the max it stands for: the same reason and code as
// the number it replaced, and the number read from api's constant.
func TestBindLimitTags(t *testing.T) {
	t.Parallel()
	type body struct {
		Purpose string `json:"purpose" validate:"required,purpose"`
		Message string `json:"message" validate:"omitempty,errormessage"`
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	var ok body
	if err := Bind(ctxFor(http.MethodPost, "/", `{"purpose":"`+long(api.MaxPurpose)+`","message":"`+long(api.MaxErrorMessage)+`"}`, nil), &ok, false); err != nil {
		t.Fatalf("texts at their limits refused: %v", err)
	}
	var dst body
	err := Bind(ctxFor(http.MethodPost, "/", `{"purpose":"`+long(api.MaxPurpose+1)+`","message":"`+long(api.MaxErrorMessage+1)+`"}`, nil), &dst, false)
	e, isApp := apperr.As(err)
	if !isApp || e.Code != api.CodeInvalidRequest {
		t.Fatalf("Bind over the limits = %v, want invalid_request", err)
	}
	got := map[string]string{}
	for _, f := range e.Fields {
		got[f.Field] = f.Reason
	}
	want := map[string]string{"purpose": fmt.Sprintf("must be at most %d", api.MaxPurpose), "message": fmt.Sprintf("must be at most %d", api.MaxErrorMessage)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
}

func TestLimitCursorAndIfMatch(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]int{"": api.DefaultLimit, "limit=1": 1, "limit=500": api.MaxLimit, "limit=0": -1, "limit=501": -1, "limit=x": -1,
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
		code     api.ProblemCode
		matches  []sqldb.RowVersion // versions the condition accepts (of v and other)
	}{
		{"", false, "", nil},
		{"", true, api.CodePreconditionRequired, nil},
		{v.ETag(), true, "", []sqldb.RowVersion{v}},
		{`W/` + v.ETag(), false, api.CodePreconditionFailed, nil},
		{`"nonsense"`, false, api.CodePreconditionFailed, nil},
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
		ctx := ctxFor(http.MethodPut, "/", "", h)
		mode := ifmatch.Optional
		if c.required {
			mode = ifmatch.Required
		}
		ctx.Set(opKey, &Op{IfMatch: mode})
		got, err := IfMatch(ctx)
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

// TestOpDrivesPathLimitsAndIfMatch: a route's path parameters are checked by the one table
// the document is built from, before the handler runs (this handler reads none of them),
// and whether If-Match is required is the Op's IfMatch mode.
func TestOpDrivesPathLimitsAndIfMatch(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Route(http.MethodDelete, "/v1/things/:agentId/:runId", Op{ID: "deleteThing", Tag: "System", Summary: "t",
		Status: http.StatusNoContent}, func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	s.Route(http.MethodPut, "/v1/things/:taskId", Op{ID: "putThing", Tag: "System", Summary: "t", IfMatch: ifmatch.Required,
		Status: http.StatusNoContent}, func(c echo.Context) error {
		if _, err := IfMatch(c); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	})
	do := func(method, target string, header map[string]string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, target, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		s.Echo.ServeHTTP(rec, req)
		var p api.Problem
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		field := ""
		if len(p.Errors) > 0 {
			field = p.Errors[0].Field
		}
		return rec.Code, string(p.Code) + " " + field
	}
	run := uuid.NewString()
	for _, c := range []struct {
		method, target string
		header         map[string]string
		status         int
		problem        string
	}{
		{http.MethodDelete, "/v1/things/" + strings.Repeat("a", 128) + "/" + run, nil, 204, " "},
		{http.MethodDelete, "/v1/things/" + strings.Repeat("a", 129) + "/" + run, nil, 400, "invalid_request agentId"},
		{http.MethodDelete, "/v1/things/a/not-a-uuid", nil, 400, "invalid_request runId"},
		{http.MethodPut, "/v1/things/" + strings.Repeat("t", 65), nil, 400, "invalid_request taskId"},
		{http.MethodPut, "/v1/things/t", nil, 428, "precondition_required "},
		{http.MethodPut, "/v1/things/t", map[string]string{"If-Match": `"0000000000000001"`}, 204, " "},
	} {
		if status, problem := do(c.method, c.target, c.header); status != c.status || problem != c.problem {
			t.Errorf("%s %.60s: %d %q, want %d %q", c.method, c.target, status, problem, c.status, c.problem)
		}
	}
}
