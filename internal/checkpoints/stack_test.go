package checkpoints_test

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
)

// stack is the whole service over a fresh SQLite file behind a real listener, with the
// clock injected.
type stack struct{ *apitest.Stack }

func newStack(t testing.TB, maxBody int64) *stack {
	t.Helper()
	return &stack{apitest.New(t, apitest.Config{Epoch: epoch, App: app.Config{MaxBody: maxBody}, Serve: true})}
}
