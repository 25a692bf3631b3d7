package apitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/web/openapi"
)

// TestStackIsTheServedService: the stack every HTTP test drives is the service `ledger
// serve` assembles, not a re-creation of it: it serves the same OpenAPI document (every
// route), and its run-lease core has the service's hooks, so a claim naming a release that
// is not active is refused as it is in production while one under the tenant's release is
// admitted.
func TestStackIsTheServedService(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{})
	want, err := app.Document(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(openapi.Document(s.Server), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatal("the stack's OpenAPI document is not the one the service serves")
	}
	tn := s.Tenant(t)
	tn.Enqueue("s1", "batch")
	claim := func(release string) apitest.Response {
		return tn.Do(http.MethodPost, "/v1/runs/claim", tn.Runtime, map[string]any{"holderId": "h", "releaseId": release,
			"adapterVersion": "1.0", "modelProfileId": "m"})
	}
	apitest.WantProblem(t, claim("rel-of-nobody"), http.StatusUnprocessableEntity, "release_not_active")
	apitest.WantStatus(t, claim(tn.Release), http.StatusOK)
}

// TestServeAndReplicaShareTheDatabase: Serve puts the stack behind a listener, and a
// replica over the same database sees what the first one wrote.
func TestServeAndReplicaShareTheDatabase(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	if s.URL == "" || s.Clock == nil || !s.Clock.Now().Equal(apitest.Epoch) {
		t.Fatalf("served stack: URL %q, clock %v", s.URL, s.Clock)
	}
	tn := s.Tenant(t)
	r := s.Replica(t, apitest.Config{Serve: true})
	if r.URL == s.URL || r.Clock != s.Clock {
		t.Fatalf("replica: URL %q (first %q), shares the clock %v", r.URL, s.URL, r.Clock == s.Clock)
	}
	apitest.WantStatus(t, r.Do(t, http.MethodGet, "/v1/projects/p1", tn.Admin, "", nil), http.StatusOK)
}
