package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestRunAndAttemptPagesShowUsage: the run page and the attempt page show what the calls
// reported (tokens and cost), read from the same totals the API answers.
func TestRunAndAttemptPagesShowUsage(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("usage-page", "batch")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	var call struct {
		CallID string `json:"callId"`
	}
	tn.Must(http.StatusCreated, "POST", cl.Path("/calls"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"sequence": 0, "kind": "model", "target": "model://m", "requestHash": "h0", "model": "m-1"}).Decode(t, &call)
	tn.Must(http.StatusOK, "PATCH", cl.Path("/calls/"+call.CallID), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"status": "succeeded", "usage": map[string]any{"inputTokens": 1200, "outputTokens": 340}, "costMicros": 5100})
	c, _, _ := httpSession(t, s, tn.Admin)
	for _, path := range []string{"/ui/runs/" + cl.Run.RunID.String(), "/ui/attempts/" + cl.Attempt.AttemptID.String()} {
		code, body := get(t, c, s, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		i := strings.Index(body, `id="usage"`)
		if i < 0 {
			t.Fatalf("%s shows no usage", path)
		}
		usage := body[i : i+strings.Index(body[i:], "</dd>")]
		for _, want := range []string{"1200 input", "340 output", "cost 5100 µ", "1 of 1 calls reported"} {
			if !strings.Contains(usage, want) {
				t.Errorf("%s: usage %q lacks %q", path, usage, want)
			}
		}
	}
}
