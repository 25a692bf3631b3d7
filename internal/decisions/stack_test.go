package decisions_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/decisions"
)

// stack is the whole service over a fresh SQLite file with an injected clock, and a
// decision store over its database and run-lease core.
type stack struct {
	*apitest.Stack
	store *decisions.Store
}

func newStack(t testing.TB) *stack {
	t.Helper()
	s := apitest.New(t, apitest.Config{Epoch: epoch})
	return &stack{Stack: s, store: decisions.NewStore(s.DB, s.Svc)}
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

// claim enqueues a run on subject over HTTP and claims it.
func (s *stack) claim(t testing.TB, c client, subject string) apitest.WireClaim {
	t.Helper()
	body := `{"subject":` + strconv.Quote(subject) + `,"kind":"review","projectId":"p1","agentId":"a",` +
		`"stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"}`
	apitest.Want(t, s.Do(t, http.MethodPost, "/v1/runs", c.runtime, body, nil), http.StatusCreated, "")
	return s.Claim(t, c.runtime, `{"holderId":"h","releaseId":`+strconv.Quote(c.release)+`,"adapterVersion":"1.0","modelProfileId":"m"}`)
}

// decisionCount is how many decisions tenant has.
func (s *stack) decisionCount(t testing.TB, tenant string) int {
	t.Helper()
	return s.Rows(t, "DecisionRequests", tenant)
}
