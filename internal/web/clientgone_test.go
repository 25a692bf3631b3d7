package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/syncbuf"
)

// brokenBody is a request body whose connection fails after a few bytes.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"subject":`), nil
	}
	return 0, io.ErrUnexpectedEOF
}

func (b *brokenBody) Close() error { return nil }

// TestClientGoneIsLoggedAsSuch: a client whose body stops arriving, or whose request is
// cancelled as its connection closes, is logged as a client disconnect (status 499), not
// as 400 invalid_request, and counted so.
func TestClientGoneIsLoggedAsSuch(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	s.SetAuth(func(roles ...string) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	})
	var seen []Request
	s.notify = func(r Request) { seen = append(seen, r) }
	type body struct {
		Subject string `json:"subject"`
	}
	s.Route(http.MethodPost, "/v1/things", Op{ID: "postThing", Tag: "System", Summary: "t", Body: body{},
		Status: http.StatusNoContent}, func(c echo.Context) error {
		var b body
		if err := Bind(c, &b, false); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	})
	s.Route(http.MethodGet, "/v1/slow", Op{ID: "getSlow", Tag: "System", Summary: "t", Status: http.StatusNoContent},
		func(c echo.Context) error {
			<-c.Request().Context().Done()
			return c.Request().Context().Err()
		})

	req := httptest.NewRequest(http.MethodPost, "/v1/things", nil)
	req.Body, req.ContentLength = &brokenBody{}, 100
	req.Header.Set("Content-Type", "application/json")
	s.Echo.ServeHTTP(httptest.NewRecorder(), req)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the connection closed
	s.Echo.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/slow", nil))

	out := logs.String()
	if strings.Count(out, `"msg":"client disconnected"`) != 2 || strings.Contains(out, string(api.CodeInvalidRequest)) ||
		strings.Count(out, `"status":499`) != 2 {
		t.Fatalf("want two client disconnects logged with status 499, no invalid_request:\n%s", out)
	}
	for _, r := range seen {
		if r.Status != StatusClientGone || r.Code != "" {
			t.Fatalf("counted as %d %q, want %d", r.Status, r.Code, StatusClientGone)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("%d requests counted", len(seen))
	}
}
