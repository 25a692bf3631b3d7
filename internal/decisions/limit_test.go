package decisions_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/decisions"
)

// TestPendingDecisionsCapped: an attempt may have DefaultMaxPending pending decisions at
// once; the next request is 409 decision_limit and writes nothing. One passing its expiry,
// or one answered, makes room; another attempt of the tenant is not held back.
func TestPendingDecisionsCapped(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := s.client(t)
	cl := s.claim(t, c, "cap:1")
	ask := func(cl apitest.WireClaim, extra string) apitest.Response {
		return s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/decisions", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"kind":"approval"%s}`, cl.Lease.FencingToken, extra), nil)
	}
	var second wireDecision
	var secondTag string
	for i := 0; i < decisions.DefaultMaxPending; i++ {
		extra := ""
		if i == 0 {
			extra = `,"expiresInSeconds":1`
		}
		r := ask(cl, extra)
		apitest.Want(t, r, http.StatusCreated, "")
		if i == 1 {
			second, secondTag = apitest.DecodeAs[wireDecision](t, r), r.Header.Get("ETag")
		}
	}
	apitest.Want(t, ask(cl, ""), http.StatusConflict, "decision_limit")
	if n := s.decisionCount(t, c.tenant); n != decisions.DefaultMaxPending {
		t.Fatalf("%d decisions stored, want %d", n, decisions.DefaultMaxPending)
	}
	// Another attempt of the tenant asks freely.
	apitest.Want(t, ask(s.claim(t, c, "cap:2"), ""), http.StatusCreated, "")

	// The first one expires: room for one.
	s.Clock.Advance(2 * time.Second)
	apitest.Want(t, ask(cl, ""), http.StatusCreated, "")
	apitest.Want(t, ask(cl, ""), http.StatusConflict, "decision_limit")
	// An answer makes room for one more.
	apitest.Want(t, s.Do(t, http.MethodPost, "/v1/decisions/"+second.DecisionID+"/answer", c.admin, `{"status":"rejected"}`,
		map[string]string{"If-Match": secondTag}), http.StatusOK, "")
	apitest.Want(t, ask(cl, ""), http.StatusCreated, "")
	apitest.Want(t, ask(cl, ""), http.StatusConflict, "decision_limit")
}
