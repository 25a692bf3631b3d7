package calls_test

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/calls"
)

// stack is the real HTTP stack over a fresh SQLite file behind a real listener, built as
// internal/app builds it, with the call routes added and the clock injected.
type stack struct{ *apitest.Stack }

func newStack(t testing.TB, maxBody int64) *stack {
	t.Helper()
	return &stack{apitest.New(t, apitest.Config{Epoch: epoch, MaxBody: maxBody, Serve: true, Routes: func(s *apitest.Stack) {
		calls.Routes(s.Server, calls.NewStore(s.DB, s.Svc))
	}})}
}
