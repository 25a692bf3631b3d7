package decisions_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/decisions"
)

// FuzzDecisionRequest sends arbitrary bodies through the real HTTP stack, as a decision
// request under a live lease and as an answer to a fresh pending decision. Whatever the
// body, the answer is never a 5xx, and a 400 writes nothing. Seeds: testdata/fuzz.
func FuzzDecisionRequest(f *testing.F) {
	s := newStack(f)
	c := s.client(f)
	cl := s.claim(f, c, "fuzz:decisions")
	attemptID := uuid.MustParse(cl.Attempt.AttemptID)
	path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
	f.Fuzz(func(t *testing.T, body []byte) {
		before := s.decisionCount(t, c.tenant)
		r := s.DoBytes(t, http.MethodPost, path, c.runtime, body, nil)
		after := s.decisionCount(t, c.tenant)
		switch {
		case r.Status >= 500:
			t.Fatalf("request: status %d for body %q: %s", r.Status, body, r.Body)
		case r.Status == http.StatusCreated && after != before+1:
			t.Fatalf("request: 201 but %d decisions were written", after-before)
		case r.Status != http.StatusCreated && after != before:
			t.Fatalf("request: status %d but %d decisions were written (body %q)", r.Status, after-before, body)
		}

		d, err := s.store.Request(context.Background(), c.tenant, attemptID, cl.Lease.FencingToken, decisions.Request{Kind: api.DecisionApproval})
		if err != nil {
			t.Fatal(err)
		}
		r = s.DoBytes(t, http.MethodPost, "/v1/decisions/"+d.DecisionID.String()+"/answer", c.admin, body,
			map[string]string{"If-Match": d.Version.ETag()})
		if r.Status >= 500 {
			t.Fatalf("answer: status %d for body %q: %s", r.Status, body, r.Body)
		}
		got, err := s.store.Get(context.Background(), c.tenant, d.DecisionID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusOK && (got.Version != d.Version || got.Status != api.DecisionPending) {
			t.Fatalf("answer: status %d but the decision changed: %+v", r.Status, got)
		}
		if r.Status == http.StatusOK && got.Status != api.DecisionApproved && got.Status != api.DecisionRejected {
			t.Fatalf("answer: 200 but the decision is %s", got.Status)
		}
	})
}
