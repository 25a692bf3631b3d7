package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// barLink is one bar of an insights chart as the browser shows it.
type barLink struct {
	Chart string `json:"chart"`
	Href  string `json:"href"`
	Rows  int64  `json:"rows"`
	Title string `json:"title"`
}

// TestEveryBarLinksToExactlyItsRows (issue 29 item 2): in a browser, every linked bar of
// every insights chart, ungrouped and grouped by agent, release and error code, opens a
// list that holds exactly as many rows as the bar counts, walked to its last page: runs
// ended, attempts ended (their own list, by end time and state), leases lost by agent and
// by release (lost attempts), attempts per finished run (runs with that many attempts) and
// time to first claim (the claimed runs queued in the window), calls per target (the calls
// started in the window), cost per model (the calls that reported usage, by their end, and
// the calls that named no model) and decisions by kind (the decisions asked in the window);
// "(none)" and "other" (the groups past the named ones: more agents than insights name) too.
func TestEveryBarLinksToExactlyItsRows(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	s.ActivateRelease(t, tn.Runtime, "rel-b", "1.0")
	start := s.Clock.Now().Truncate(time.Hour)
	enqueue := func(subject, agent string) {
		tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": subject, "kind": "review",
			"projectId": "p1", "agentId": agent, "stepId": uuid.NewString(), "snapshotId": uuid.NewString()})
	}
	claim := func(release string, lease int) apitest.Claimed {
		t.Helper()
		cl, ok, _ := tn.Claim(lease, map[string]any{"releaseId": release})
		if !ok {
			t.Fatal("claim found nothing")
		}
		return cl
	}
	complete := func(cl apitest.Claimed, state, code string) {
		t.Helper()
		body := map[string]any{"fencingToken": cl.Lease.FencingToken, "state": state}
		if code != "" {
			body["error"] = map[string]any{"code": code, "message": "because " + code}
		}
		tn.Must(http.StatusOK, "POST", cl.Path("/complete"), tn.Runtime, body)
	}
	// The first hour: 55 runs of one attempt each, more than a page of every list, each of
	// its own agent: grouped by agent, more groups than insights name (the rest are "other").
	// Most succeed; 52 fail each with its own error code: grouped by error code, "other"
	// beside a named "(none)" (its link leaves out the runs without an error).
	for i := range 55 {
		enqueue(fmt.Sprintf("bulk-%d", i), fmt.Sprintf("agent-1-%02d", i))
	}
	for i := range 55 {
		if i < 52 {
			complete(claim(tn.Release, 600), "failed", fmt.Sprintf("code_%02d", i))
		} else {
			complete(claim(tn.Release, 600), "succeeded", "")
		}
	}
	// The second hour, agent-2 on rel-b: two fail, two are released and taken again, two
	// lose their lease to the reaper and are taken again.
	s.Clock.Advance(time.Hour)
	for i := range 6 {
		enqueue(fmt.Sprintf("mixed-%d", i), "agent-2")
	}
	s.Clock.Advance(10 * time.Second)
	// Each failing attempt makes a model call that reports usage and a tool call that does
	// not; one model call names no model.
	for i := range 2 {
		cl := claim("rel-b", 600)
		for seq, c := range []struct{ target, model, usage string }{
			{"model://claude", []string{"claude-sonnet-4", ""}[i], `,"usage":{"inputTokens":100},"costMicros":25`},
			{"tool://search", "", ""},
		} {
			body := map[string]any{"fencingToken": cl.Lease.FencingToken, "sequence": seq, "kind": "model", "target": c.target,
				"requestHash": fmt.Sprintf("h%d", seq)}
			if c.model != "" {
				body["model"] = c.model
			}
			var call struct {
				CallID string `json:"callId"`
			}
			tn.Must(http.StatusCreated, "POST", cl.Path("/calls"), tn.Runtime, body).Decode(t, &call)
			finish := map[string]any{"fencingToken": cl.Lease.FencingToken, "status": "succeeded"}
			if c.usage != "" {
				finish["usage"] = map[string]any{"inputTokens": 100}
				finish["costMicros"] = 25
			}
			tn.Must(http.StatusOK, "PATCH", cl.Path("/calls/"+call.CallID), tn.Runtime, finish)
		}
		// Each asks for two decisions, which its end cancels: the decisions chart counts them
		// by kind and by when they were asked.
		for _, kind := range []string{"approval", "input"} {
			tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": kind})
		}
		complete(cl, "failed", "tool_timeout")
	}
	// A run never claimed, cancelled: runs ended by release count it as "(none)".
	enqueue("never-claimed", "agent-3")
	var unclaimed struct {
		Items []struct {
			RunID string `json:"runId"`
		} `json:"items"`
	}
	tn.Must(http.StatusOK, "GET", "/v1/runs?subject=never-claimed", tn.Admin, nil).Decode(t, &unclaimed)
	if len(unclaimed.Items) != 1 {
		t.Fatalf("the never-claimed run: %+v", unclaimed)
	}
	tn.Must(http.StatusOK, "POST", "/v1/runs/"+unclaimed.Items[0].RunID+"/cancel", tn.Admin, nil)
	for range 2 {
		cl := claim("rel-b", 600)
		tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
			"retryAfterSeconds": 0, "error": map[string]any{"code": "busy"}})
		complete(claim(tn.Release, 600), "succeeded", "")
	}
	lost := []apitest.Claimed{claim("rel-b", 30), claim("rel-b", 30)}
	s.Clock.Advance(time.Minute)
	if _, err := s.App.Runs.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(15 * time.Minute) // past the backoff a lost lease queues its run with
	for range lost {
		complete(claim(tn.Release, 600), "failed", "bad_input")
	}
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}

	ctx := tabWithin(t, 4*time.Minute)
	signIn(t, ctx, s, tn.Admin)
	const readBars = `[...document.querySelectorAll("section.chart-box")].flatMap(sec => [...sec.querySelectorAll("svg a[data-rows]")].map(
	    a => ({chart: sec.getAttribute("aria-labelledby"), href: a.getAttribute("href"), rows: +a.dataset.rows,
	           title: a.querySelector("title").textContent})))`
	// countList counts the rows of the list at href, following "next" to the last page.
	countList := func(href string) (n int64, pages int) {
		t.Helper()
		for next := href; next != ""; pages++ {
			if pages > 20 {
				t.Fatalf("%s: the list does not end", href)
			}
			do(t, ctx, chromedp.Navigate(s.URL+next), chromedp.WaitReady(chromedp.CSS("main")))
			n += eval[int64](t, ctx, `document.querySelectorAll("main table.grid tbody tr").length`)
			next = eval[string](t, ctx, `document.querySelector('a[rel="next"]')?.getAttribute("href") ?? ""`)
		}
		return n, pages
	}
	// Every bar is a link: a plain group (a bar no list can show exactly) fails the test.
	const readUnlinked = `[...document.querySelectorAll("section.chart-box")].flatMap(sec => [...sec.querySelectorAll("svg g:has(> rect.hit)")].map(
	    g => sec.getAttribute("aria-labelledby") + ": " + g.querySelector("title").textContent))`
	none, other := map[string]bool{}, map[string]bool{}
	number := regexp.MustCompile(`(?:^|, )(\d+) `)
	counted := map[string]int64{}
	charts := map[string]int{}
	paged := false
	window := "bucket=1h&from=" + start.Format("2006-01-02T15:04:05") + "&to=" + start.Add(3*time.Hour).Format("2006-01-02T15:04:05")
	for _, group := range []string{"", "agent", "release", "errorCode"} {
		do(t, ctx, chromedp.Navigate(s.URL+"/ui/insights?"+window+"&group="+group), chromedp.WaitVisible(chromedp.CSS("#t-runs-ended")))
		bars := eval[[]barLink](t, ctx, readBars)
		for _, u := range eval[[]string](t, ctx, readUnlinked) {
			t.Errorf("grouped by %q, bar %q links to no list", group, u)
		}
		for _, b := range bars {
			if strings.HasPrefix(b.Title, "(none)") {
				none[group+" "+b.Chart] = true
			}
			if strings.HasPrefix(b.Title, "other") {
				other[group+" "+b.Chart] = true
			}
			// A bar of counts says them in its tooltip: they sum to what its link lists.
			if b.Chart != "h-latency" && b.Chart != "h-cost" {
				title := b.Title[len(b.Title)-len(b.Title[indexColon(b.Title):]):]
				var sum int64
				for _, m := range number.FindAllStringSubmatch(title, -1) {
					v, _ := strconv.ParseInt(m[1], 10, 64)
					sum += v
				}
				if sum != b.Rows {
					t.Errorf("grouped by %q, %s bar %q counts %d but links %d rows", group, b.Chart, b.Title, sum, b.Rows)
				}
			}
			charts[b.Chart]++
			if _, ok := counted[b.Href]; !ok {
				n, pages := countList(b.Href)
				counted[b.Href] = n
				paged = paged || pages > 1
			}
			if got := counted[b.Href]; got != b.Rows {
				t.Errorf("grouped by %q, %s bar %q counts %d, its link %s lists %d", group, b.Chart, b.Title, b.Rows, b.Href, got)
			}
		}
	}
	for _, c := range []string{"h-runs-ended", "h-attempts-ended", "h-lost-agent", "h-lost-release", "h-per-run", "h-latency", "h-calls", "h-cost", "h-decisions"} {
		if charts[c] == 0 {
			t.Errorf("no linked bar in chart %s (charts seen: %v)", c, charts)
		}
	}
	// The rows without a value are linked too: the runs and attempts without an error
	// (hasError=false), the calls that named no model (hasModel=false)
	// and the runs never claimed (hasRelease=false).
	for _, want := range []string{"errorCode h-runs-ended", "errorCode h-attempts-ended", " h-cost", "release h-runs-ended"} {
		if !none[want] {
			t.Errorf("no linked \"(none)\" bar %q (seen: %v)", want, none)
		}
	}
	// Grouped by agent or error code there are more groups than insights name: the "other"
	// group, linked to the rows of none of the named groups.
	for _, want := range []string{"agent h-runs-ended", "agent h-attempts-ended", "agent h-latency",
		"errorCode h-runs-ended", "errorCode h-attempts-ended", "errorCode h-latency"} {
		if !other[want] {
			t.Errorf("no linked \"other\" bar %q (seen: %v)", want, other)
		}
	}
	if !paged {
		t.Error("no list took more than one page: the walk to the last page went untested")
	}
}

// indexColon is where a bar's tooltip ends its label ("label: 3 failed, 2 succeeded").
func indexColon(s string) int {
	for i := len(s) - 2; i >= 0; i-- {
		if s[i:i+2] == ": " {
			return i + 2
		}
	}
	return 0
}
