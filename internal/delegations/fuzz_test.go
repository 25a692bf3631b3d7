package delegations_test

import (
	"net/http"
	"testing"
)

// FuzzDelegationRequest sends arbitrary bodies through the real HTTP stack as a delegation
// under a live lease. Whatever the body, the answer is never a 5xx; a 201 writes exactly
// one child run and one delegation, and anything else (400 included) writes nothing.
// Seeds: testdata/fuzz.
func FuzzDelegationRequest(f *testing.F) {
	s := newStack(f)
	c := s.client(f)
	p := s.parent(f, c, "fuzz:parent")
	path := "/v1/attempts/" + p.Attempt.AttemptID + "/delegations"
	f.Fuzz(func(t *testing.T, body []byte) {
		runsBefore, delegationsBefore := s.Rows(t, "Runs", c.tenant), s.Rows(t, "SubAgentDelegations", c.tenant)
		r := s.DoBytes(t, http.MethodPost, path, c.runtime, body, nil)
		runsAfter, delegationsAfter := s.Rows(t, "Runs", c.tenant), s.Rows(t, "SubAgentDelegations", c.tenant)
		wrote := runsAfter != runsBefore || delegationsAfter != delegationsBefore
		switch {
		case r.Status >= 500:
			t.Fatalf("status %d for body %q: %s", r.Status, body, r.Body)
		case r.Status == http.StatusCreated && (runsAfter != runsBefore+1 || delegationsAfter != delegationsBefore+1):
			t.Fatalf("201 but %d runs and %d delegations were written", runsAfter-runsBefore, delegationsAfter-delegationsBefore)
		case r.Status != http.StatusCreated && wrote:
			t.Fatalf("status %d but rows were written (body %q): %s", r.Status, body, r.Body)
		}
	})
}
