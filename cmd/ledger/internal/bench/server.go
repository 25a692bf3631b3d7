package bench

import (
	"context"
	"time"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/serveproc"
)

// keys are a tenant's admin and runtime keys.
type keys struct{ admin, runtime string }

// startServer starts a fresh server as the bench measures it: with durability syncMode, and
// without the per-tenant rate limit or the in-flight cap, which would cap the load instead
// of the service.
func startServer(ctx context.Context, bin, db, syncMode string, timeout time.Duration) (*serveproc.Server, error) {
	return serveproc.Start(ctx, bin, db, timeout, "--sqlite-sync", syncMode, "--rate-limit", "0", "--max-inflight", "0")
}

// keysOf returns the bootstrap keys srv printed.
func keysOf(srv *serveproc.Server) keys {
	return keys{admin: srv.Keys.Admin, runtime: srv.Keys.Runtime}
}
