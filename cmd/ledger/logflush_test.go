package main

import (
	"context"
	"github.com/ledger-dev/ledger/internal/syncbuf"
	"strings"
	"testing"
	"time"
)

// TestServeLogFlushHoldsLinesAndWritesThemAtShutdown: with --log-flush the log lines are held
// (none written while serve runs, the interval being an hour), and a shutdown writes every one
// of them, its own "stopped" line included.
func TestServeLogFlushHoldsLinesAndWritesThemAtShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serveCtx, stop := context.WithCancel(ctx)
	var stdout, stderr syncbuf.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(serveCtx, []string{"serve", "--db", tempDB(t), "--addr", "127.0.0.1:0", "--log-flush", "1h"}, &stdout, &stderr)
	}()
	// The bootstrap keys are printed after the database is opened and logged about.
	for stdout.String() == "" {
		select {
		case c := <-code:
			t.Fatalf("serve exited %d: %s", c, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if held := stderr.String(); held != "" {
		t.Fatalf("lines written while serve runs under --log-flush 1h: %q", held)
	}
	stop()
	if c := <-code; c != 0 {
		t.Fatalf("serve exited %d: %s", c, stderr.String())
	}
	for _, msg := range []string{`"msg":"starting"`, `"msg":"stopped"`} {
		if !strings.Contains(stderr.String(), msg) {
			t.Fatalf("shutdown did not write the held line %s: %q", msg, stderr.String())
		}
	}
}
