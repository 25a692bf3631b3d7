package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/logbuf"
)

const chainBody = `{"fencingToken":12,"sequence":3,"phase":"acting","adapterStateRef":"bench://state/1/3","adapterVersion":"1.0","hash":"000000000000000c0000000000000003"}`

// BenchmarkChain sends one fenced checkpoint through the whole HTTP handler chain per op.
// Its figures that do not move with the machine's load are allocs/op and, under
// `valgrind --tool=callgrind` or a CPU profile, instructions and shares; ns/op does move.
// Sub-benchmarks differ only in where the access log goes: nowhere (io.Discard), a file
// written line by line (as stderr is today), or that file behind a logbuf.Writer.
//
//	go test -run '^$' -bench Chain -benchmem ./internal/web/
func BenchmarkChain(b *testing.B) {
	for _, sink := range []string{"discard", "file", "buffered"} {
		b.Run("log="+sink, func(b *testing.B) {
			var w io.Writer = io.Discard
			if sink != "discard" {
				f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { f.Close() })
				w = f
				if sink == "buffered" {
					bw := logbuf.New(f, 100*time.Millisecond)
					b.Cleanup(func() { bw.Close() })
					w = bw
				}
			}
			h := chainHandler(b, w)
			path := "/v1/attempts/" + uuid.NewString() + "/checkpoints"
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(chainBody))
				req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

func chainHandler(b *testing.B, w io.Writer) http.Handler {
	b.Helper()
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(w, nil))})
	s.SetAuth(func(roles ...string) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	})
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/checkpoints", Op{ID: "appendCheckpoint", Tag: "Attempts", Summary: "append",
		Body: api.CheckpointRequest{}, Status: http.StatusCreated, Response: api.Checkpoint{}},
		func(c echo.Context) error {
			id, err := PathUUID(c, "attemptId")
			if err != nil {
				return err
			}
			var req api.CheckpointRequest
			if err := Bind(c, &req, false); err != nil {
				return err
			}
			return c.JSON(http.StatusCreated, api.Checkpoint{CheckpointID: id, AttemptID: id, Sequence: *req.Sequence,
				Phase: *req.Phase, AdapterStateRef: req.AdapterStateRef, AdapterVersion: req.AdapterVersion, Hash: req.Hash})
		})
	return s.Echo
}
