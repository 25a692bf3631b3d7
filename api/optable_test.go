package api_test

import (
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
)

// The table's paths are split once when read; putting each parameter back in braces must
// give the template again, for every operation.
func TestEndpointPathsSplitAtTheirParameters(t *testing.T) {
	t.Parallel()
	for id, e := range api.Endpoints() {
		params := e.PathParams()
		got := e.ExpandPath(func(i int) string { return "{" + params[i] + "}" })
		if got != e.Path {
			t.Errorf("%s: %q split and joined is %q", id, e.Path, got)
		}
		if want := strings.Count(e.Path, "{"); len(params) != want {
			t.Errorf("%s: %d parameters, the template has %d", id, len(params), want)
		}
	}
}
