package decisions_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// Over HTTP, each exchange checked against the OpenAPI document: a decision asked with an
// idempotency key (201, then 200 with the same decision, then 409 for another request
// under the key), the park route (200 with the parked attempt, 422 for a decision that is
// not the run's, 400 naming nothing), and the run's decisions across its attempts.
func TestParkHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := s.client(t)
	cl := s.claim(t, c, "review:park")
	ask := func(body string) apitest.Response {
		return s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/decisions", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,%s}`, cl.Lease.FencingToken, body), nil)
	}
	first := ask(`"kind":"approval","idempotencyKey":"step-1"`)
	apitest.Want(t, first, http.StatusCreated, "")
	d := apitest.DecodeAs[wireDecision](t, first)
	again := ask(`"kind":"approval","idempotencyKey":"step-1"`)
	apitest.Want(t, again, http.StatusOK, "")
	if got := apitest.DecodeAs[wireDecision](t, again); got.DecisionID != d.DecisionID {
		t.Fatalf("a repeat under the key answered decision %s, want %s", got.DecisionID, d.DecisionID)
	}
	apitest.WantProblem(t, ask(`"kind":"approval","recommendation":"no","idempotencyKey":"step-1"`), http.StatusConflict, "idempotency_key_reused")

	park := func(body string) apitest.Response {
		return s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/park", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d%s}`, cl.Lease.FencingToken, body), nil)
	}
	apitest.WantFields(t, park(""), "decisionIds")
	other := s.client(t)
	ocl := s.claim(t, other, "review:other")
	od := s.Do(t, http.MethodPost, "/v1/attempts/"+ocl.Attempt.AttemptID+"/decisions", other.runtime,
		fmt.Sprintf(`{"fencingToken":%d,"kind":"approval"}`, ocl.Lease.FencingToken), nil)
	apitest.Want(t, od, http.StatusCreated, "")
	apitest.WantProblem(t, park(`,"decisionIds":["`+apitest.DecodeAs[wireDecision](t, od).DecisionID+`"]`), http.StatusUnprocessableEntity, "unknown_decision")

	parked := park(`,"decisionIds":["` + d.DecisionID + `"]`)
	apitest.Want(t, parked, http.StatusOK, "")
	if a := apitest.DecodeAs[struct {
		State string `json:"state"`
	}](t, parked); a.State != "parked" {
		t.Fatalf("parked attempt state %q", a.State)
	}
	apitest.Want(t, park(`,"decisionIds":["`+d.DecisionID+`"]`), http.StatusOK, "") // a repeat

	list := s.Do(t, http.MethodGet, "/v1/runs/"+cl.Run.RunID+"/decisions", c.admin, "", nil)
	apitest.Want(t, list, http.StatusOK, "")
	if p := apitest.DecodeAs[wirePage](t, list); len(p.Items) != 1 || p.Items[0].DecisionID != d.DecisionID || p.Items[0].Status != "pending" {
		t.Fatalf("run's decisions: %s", list.Body)
	}
	apitest.Want(t, s.Do(t, http.MethodGet, "/v1/runs/"+cl.Run.RunID+"/decisions", other.admin, "", nil), http.StatusNotFound, "not_found")
}
