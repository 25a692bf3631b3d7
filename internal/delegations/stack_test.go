package delegations_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/delegations"
)

// stack is the whole service over a fresh SQLite file with an injected clock, and a
// delegation store over its database and run-lease core.
type stack struct {
	*apitest.Stack
	store *delegations.Store
}

func newStack(t testing.TB) *stack {
	t.Helper()
	s := apitest.New(t, apitest.Config{Epoch: epoch})
	return &stack{Stack: s, store: delegations.NewStore(s.DB, s.Svc)}
}

// client is one tenant seen through its keys.
type client struct {
	tenant, admin, runtime string
	adminKeyID             string
	release                string
}

func (s *stack) client(t testing.TB) client {
	t.Helper()
	c := s.Tenant(t)
	return client{tenant: c.ID, admin: c.Admin, runtime: c.Runtime, adminKeyID: c.AdminKeyID, release: c.Release}
}

// claim claims the next run of agent over HTTP.
func (s *stack) claim(t testing.TB, c client, agent string) apitest.WireClaim {
	t.Helper()
	return s.Claim(t, c.runtime, `{"holderId":"h","releaseId":`+strconv.Quote(c.release)+`,"adapterVersion":"1.0","modelProfileId":"m","agentIds":[`+strconv.Quote(agent)+`]}`)
}

// parent enqueues a parent run on subject over HTTP and claims it.
func (s *stack) parent(t testing.TB, c client, subject string) apitest.WireClaim {
	t.Helper()
	apitest.Want(t, s.Do(t, http.MethodPost, "/v1/runs", c.runtime, enqueueBody(subject, parentAgent, ""), nil), http.StatusCreated, "")
	return s.claim(t, c, parentAgent)
}

// enqueueBody is an enqueue body; extra (",…") adds fields.
func enqueueBody(subject, agent, extra string) string {
	return `{"subject":` + strconv.Quote(subject) + `,"kind":"review","projectId":"p1","agentId":` + strconv.Quote(agent) +
		`,"stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"` + extra + `}`
}
