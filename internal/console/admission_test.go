package console_test

import (
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// TestConsolePassesTheAPIAdmission: signed-in console pages spend the tenant's request
// rate as the API's routes do, so past it a page is 429 rate_limited with Retry-After (the
// console used to be served outside the admission: every page while the API refused).
func TestConsolePassesTheAPIAdmission(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true, App: app.Config{Limits: admission.Limits{Rate: 0.001, Burst: 8}}})
	tn := s.NewTenant(t)
	c, _, _ := httpSession(t, s, tn.Admin)
	served, refused := 0, 0
	for range 20 {
		r, err := c.Get(s.URL + "/ui/runs")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		switch {
		case r.StatusCode == http.StatusOK && refused == 0:
			served++
		case r.StatusCode == http.StatusTooManyRequests && r.Header.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("page %d answered %d (Retry-After %q)", served+refused, r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
	if refused == 0 || served > 8 {
		t.Fatalf("%d pages served and %d refused past a burst of 8: the console is not admitted as the API is", served, refused)
	}
	// The API refuses the same tenant alike: one budget for both.
	if got := s.Do(t, http.MethodGet, "/v1/projects", tn.Admin, "", nil); got.Status != http.StatusTooManyRequests {
		t.Fatalf("the API answered %d after the console spent the rate", got.Status)
	}
}
