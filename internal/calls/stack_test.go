package calls_test

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/runs"
)

// stack is the real HTTP stack over a fresh SQLite file behind a real listener, built as
// internal/app builds it, with the call routes and hooks added and the clock injected.
type stack struct{ *apitest.Stack }

func newStack(t testing.TB, maxBody int64) *stack {
	t.Helper()
	hooks := []runs.Hooks{calls.Hooks()} // as internal/app adds them
	return &stack{apitest.New(t, apitest.Config{Epoch: epoch, MaxBody: maxBody, Serve: true, Hooks: hooks, Routes: func(s *apitest.Stack) {
		calls.Routes(s.Server, calls.NewStore(s.DB, s.Svc))
	}})}
}
