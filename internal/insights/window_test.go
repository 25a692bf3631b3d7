package insights_test

import (
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestInsightWindowOutsideNanoseconds is issue 30 item 7: a window end outside
// 1678..2262 (where nanoseconds since 1970 overflow an int64) is 400 naming it; it was a
// 500 (from=0001-01-01) or a window shifted by centuries (2300-01-01). Just inside the
// range, a window answers.
func TestInsightWindowOutsideNanoseconds(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{})
	ten := s.Tenant(t)
	for path, field := range map[string]string{
		"/v1/insights/runs?from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z&bucket=1d": "from",
		"/v1/insights/runs?from=1677-12-31T00:00:00Z&to=1678-01-02T00:00:00Z&bucket=1d": "from",
		"/v1/insights/calls?from=2300-01-01T00:00:00Z&to=2300-01-02T00:00:00Z":          "from",
		"/v1/insights/calls?to=2262-01-01T00:00:01Z":                                    "to",
	} {
		apitest.WantFields(t, s.Do(t, http.MethodGet, path, ten.Admin, "", nil), field)
	}
	for _, path := range []string{
		"/v1/insights/runs?from=1678-01-01T00:00:00Z&to=1678-01-02T00:00:00Z&bucket=1d",
		"/v1/insights/runs?from=2261-12-31T00:00:00Z&to=2262-01-01T00:00:00Z&bucket=1d",
	} {
		apitest.WantStatus(t, s.Do(t, http.MethodGet, path, ten.Admin, "", nil), http.StatusOK)
	}
}
