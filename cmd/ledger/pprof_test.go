package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestPprofListener: --pprof-addr serves the profiles on a listener of its own, which stops
// with the server; an address that cannot be listened on fails the start.
func TestPprofListener(t *testing.T) {
	t.Parallel()
	addr, stop, err := servePprof("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.80q", res.StatusCode, body)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Fatal("the pprof listener still answers after stop")
	}
	if _, _, err := servePprof("127.0.0.1:-1", slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "--pprof-addr") {
		t.Fatalf("a bad address: %v, want an error naming --pprof-addr", err)
	}
}
