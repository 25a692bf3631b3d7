package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// endRuns leases n runs and ends each with the next state of states, an hour apart.
func endRuns(t *testing.T, s *apitest.Stack, tn *apitest.Tenant, states ...string) {
	t.Helper()
	for i, st := range states {
		tn.Enqueue(fmt.Sprintf("ins-%d", i), "batch")
		cl, ok, _ := tn.Claim(600, nil)
		if !ok {
			t.Fatal("claim found nothing")
		}
		s.Clock.Advance(time.Minute)
		tn.Must(http.StatusOK, "POST", cl.Path("/complete"), tn.Runtime,
			map[string]any{"fencingToken": cl.Lease.FencingToken, "state": st})
		s.Clock.Advance(time.Hour)
	}
}

// TestInsightsPageMatchesAPI: the Insights page's runs-ended table has, bucket by bucket
// and outcome by outcome, the numbers GET /v1/insights/runs answers for the same window;
// the page fits a laptop and a phone; the bars link to the runs list; the overview's
// sparkline table agrees with the API too.
func TestInsightsPageMatchesAPI(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	endRuns(t, s, tn, "succeeded", "failed", "succeeded", "cancelled")
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}

	var api24 api.InsightSeries
	tn.Must(http.StatusOK, "GET", "/v1/insights/runs", tn.Admin, nil).Decode(t, &api24)
	want := map[string][]string{}
	for i, b := range api24.Buckets {
		var total int64
		cells := []string{}
		for _, sr := range api24.Groups[0].Series {
			cells = append(cells, strconv.FormatInt(sr.Counts[i], 10))
			total += sr.Counts[i]
		}
		if total > 0 {
			want[b.String()] = append(cells, strconv.FormatInt(total, 10))
		}
	}
	if len(want) != 4 {
		t.Fatalf("the API counts runs in %d buckets, want 4: %+v", len(want), api24.Groups)
	}
	const readTable = `(sel => Object.fromEntries([...document.querySelectorAll(sel + " tbody tr")].map(
	    tr => [tr.dataset.bucket, [...tr.querySelectorAll("td")].map(td => td.textContent.trim())])))`

	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	if !eval[bool](t, ctx, `!!document.getElementById("t-spark")`) {
		t.Fatalf("the overview has no sparkline table: %s", text(t, ctx, "main"))
	}
	if got := eval[map[string][]string](t, ctx, readTable+`("#t-spark")`); fmt.Sprint(got) != fmt.Sprint(dropTotals(want)) {
		t.Errorf("overview sparkline table %v, API %v", got, dropTotals(want))
	}
	clickNav(t, ctx, `nav a[href="/ui/insights"]`, "#t-runs-ended")
	if got := eval[map[string][]string](t, ctx, readTable+`("#t-runs-ended")`); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("insights runs-ended table %v, API %v", got, want)
	}
	heads := eval[[]string](t, ctx, `[...document.querySelectorAll("#t-runs-ended thead th")].map(th => th.textContent.trim())`)
	if fmt.Sprint(heads) != "[Bucket (UTC) succeeded failed cancelled exhausted deadline Total]" {
		t.Errorf("runs-ended table heads %v", heads)
	}
	shot(t, ctx, "insights")

	// Grouped by agent over a window given in the form, the group table agrees with the API.
	from := api24.Buckets[0].Time.Format("2006-01-02T15:04:05")
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/insights?group=agent&bucket=5m&from="+from),
		chromedp.WaitVisible(chromedp.CSS("#t-runs-ended-groups")))
	if p := eval[bool](t, ctx, `!!document.getElementById("problem")`); p {
		t.Fatalf("the form's window was refused: %s", text(t, ctx, "#problem"))
	}
	var byAgent api.InsightSeries
	tn.Must(http.StatusOK, "GET", "/v1/insights/runs?groupBy=agent&bucket=5m&from="+api24.Buckets[0].String(), tn.Admin, nil).Decode(t, &byAgent)
	got := eval[[]string](t, ctx, `[...document.querySelectorAll("#t-runs-ended-groups tbody tr")].map(tr => tr.dataset.group + "=" + tr.lastElementChild.textContent)`)
	if len(byAgent.Groups) != 1 || fmt.Sprint(got) != fmt.Sprintf("[%s=%d]", byAgent.Groups[0].Key, byAgent.Groups[0].Total) {
		t.Errorf("runs ended by agent: console %v, API %+v", got, byAgent.Groups)
	}
	// A bar links to the runs list of its bucket.
	href := eval[string](t, ctx, `document.querySelector("#t-runs-ended tbody tr a").getAttribute("href")`)
	clickNav(t, ctx, `#t-runs-ended tbody tr a`, "#runs")
	if n := eval[int](t, ctx, `document.querySelectorAll("#runs tbody tr").length`); n != 1 {
		t.Errorf("the first bucket's link %s lists %d runs, want 1", href, n)
	}

	// The page fits a phone: nothing wider than the screen but the tables' own scroll boxes.
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.URL+"/ui/insights"), chromedp.WaitVisible(chromedp.CSS("#t-runs-ended")))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("on a 390 px screen the insights page is %d px wide", w)
	}
	shot(t, ctx, "insights-phone")
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.URL+"/ui/insights?from=x"), chromedp.WaitVisible(chromedp.CSS("#problem")))
}

func dropTotals(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = v[:len(v)-1]
	}
	return out
}
