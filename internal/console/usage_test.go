package console_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestRunAndAttemptPagesShowUsage: the run page and the attempt page show what the calls
// reported (tokens and cost), read from the same totals the API answers.
func TestRunAndAttemptPagesShowUsage(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("usage-page", "batch")
	s.Clock.Advance(time.Minute) // off the hour: a window's end (now, rounded up) excludes itself
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
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _, _ := httpSession(t, s, tn.Admin)
	// The insights page's cost table: one row for the model, with its sums.
	code, body := get(t, c, s, "/ui/insights?bucket=1h")
	costRow := regexp.MustCompile(`<tr data-group="m-1"><th scope="row" title="m-1"><a href="([^"]+)">m-1</a></th><td>1</td><td>1200</td><td>340</td><td>5100</td></tr>`)
	m := costRow.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		i := strings.Index(body, `id="t-cost"`)
		t.Fatalf("insights: %d, cost table %q", code, body[max(i, 0):min(len(body), max(i, 0)+800)])
	}
	// The row links to the one call it counts.
	if code, list := get(t, c, s, html.UnescapeString(m[1])); code != http.StatusOK || strings.Count(list, `<a href="/ui/attempts/`+cl.Attempt.AttemptID.String()) != 1 {
		t.Fatalf("the cost row's link %s: %d, lists the call %d times", m[1], code, strings.Count(list, cl.Attempt.AttemptID.String()))
	}
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

// TestProjectsPageShowsTheDailyCostBudget: the projects page shows each project's cost
// today, its budget and whether it holds claims.
func TestProjectsPageShowsTheDailyCostBudget(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	etag := tn.Must(http.StatusOK, "GET", "/v1/projects/p1", tn.Admin, nil).Header.Get("ETag")
	tn.Must(http.StatusOK, "PUT", "/v1/projects/p1", tn.Admin, map[string]any{"dailyCostBudgetMicros": 100}, "If-Match", etag)
	tn.Enqueue("budget-page", "batch")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	var call struct {
		CallID string `json:"callId"`
	}
	tn.Must(http.StatusCreated, "POST", cl.Path("/calls"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"sequence": 0, "kind": "model", "target": "model://m", "requestHash": "h0"}).Decode(t, &call)
	tn.Must(http.StatusOK, "PATCH", cl.Path("/calls/"+call.CallID), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"status": "succeeded", "costMicros": 150})
	c, _, _ := httpSession(t, s, tn.Admin)
	code, body := get(t, c, s, "/ui/projects")
	i := strings.Index(body, `<tr data-project="p1">`)
	if code != http.StatusOK || i < 0 {
		t.Fatalf("projects page: %d", code)
	}
	row := body[i : i+strings.Index(body[i:], "</tr>")]
	if !strings.Contains(row, "150 of 100") || !strings.Contains(row, ">held</span>") {
		t.Fatalf("project row %q, want 150 of 100 and held", row)
	}
}
