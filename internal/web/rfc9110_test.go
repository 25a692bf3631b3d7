package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

func TestCheckMediaType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ct   string
		body string
		ok   bool
	}{
		{"application/json", "{}", true},
		{"application/json; charset=utf-8", "{}", true},
		{"application/json;charset=UTF-8", "{}", true},
		{"APPLICATION/JSON", "{}", true},
		{"application/vnd.ledger+json", "{}", true},
		{"application/problem+json; charset=utf-8", "{}", true},
		{"", "", true}, // no body, no type: an empty body
		{"application/json", "", true},
		{"", "{}", false},
		{"text/plain", "{}", false},
		{"text/plain", "", false}, // a declared type that is not JSON, even without a body
		{"application/json; charset=iso-8859-1", "{}", false},
		{"application/+json", "{}", false},
		{"application/jsonp", "{}", false},
		{"text/json", "{}", false},
		{"application/json; =", "{}", false},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		err := checkMediaType(req)
		if (err == nil) != c.ok {
			t.Errorf("Content-Type %q with body %q: %v", c.ct, c.body, err)
		}
		if err != nil && apperr.CodeOf(err) != api.CodeUnsupportedMediaType {
			t.Errorf("Content-Type %q: code %s", c.ct, apperr.CodeOf(err))
		}
	}
	// A body of unknown length (chunked) counts as a body.
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	req.ContentLength = -1
	if checkMediaType(req) == nil {
		t.Error("a chunked body without Content-Type passed")
	}
}

func TestMethodNotAllowedOnARouteOutsideTheTable(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Echo.GET("/direct", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	s.Route(http.MethodGet, "/v1/things/:id", Op{ID: "getThing", Tag: "Things", Summary: "get", Status: http.StatusOK}, func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	s.Route(http.MethodPost, "/v1/things/special", Op{ID: "postThing", Tag: "Things", Summary: "post", Status: http.StatusOK}, func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodPost, "/direct", "GET"},
		{http.MethodDelete, "/v1/things/x", "GET, HEAD"},
		// Echo serves GET /v1/things/special with the parameter route: Allow says so.
		{http.MethodPut, "/v1/things/special", "GET, HEAD, POST"},
		{http.MethodOptions, "/v1/things/x", "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		s.Echo.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.allow)
		}
	}
	rec := httptest.NewRecorder()
	s.Echo.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/things/special", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /v1/things/special: %d", rec.Code)
	}
}
