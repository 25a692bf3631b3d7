package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestReadableAtAGlance is issue 29 item 5, checked in the browser at 1280 and 390 px on a
// scripted history: the runs table shows its Spent column whole on a laptop; the decisions
// inbox keeps Subject, Recommendation and Answer on a phone's screen; chart axis labels
// render at least 10 px; long group names carry their whole name in a title; claim
// latency shows p50 and p95 as two series from zero with a legend; durations read in
// human units; and the decisions table accounts for every request (requested = answered +
// pending + expired + cancelled).
func TestReadableAtAGlance(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	agent := "bench-agent-with-a-long-name-" + strings.Repeat("x", 30)
	errCode := "upstream.timeout.of-the-" + strings.Repeat("x", 30)

	// Run A asks three decisions: one answered, one that expires, one left pending until
	// the attempt ends (cancelled). Run B asks one that stays pending.
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": "a", "kind": "review", "projectId": "p1",
		"agentId": agent, "stepId": uuid.NewString(), "snapshotId": uuid.NewString()})
	s.Clock.Advance(17268 * time.Millisecond)
	a, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	ask := func(cl apitest.Claimed, body map[string]any) decision {
		body["fencingToken"] = cl.Lease.FencingToken
		var d decision
		tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, body).Decode(t, &d)
		return d
	}
	answered := ask(a, map[string]any{"kind": "approval", "recommendation": "ship"})
	ask(a, map[string]any{"kind": "approval", "recommendation": "wait", "expiresInSeconds": 30})
	ask(a, map[string]any{"kind": "approval", "recommendation": "later"})
	etag := tn.Must(http.StatusOK, "GET", "/v1/decisions/"+answered.DecisionID.String(), tn.Admin, nil).Header.Get("ETag")
	tn.Must(http.StatusOK, "POST", "/v1/decisions/"+answered.DecisionID.String()+"/answer", tn.Admin,
		map[string]any{"status": "approved"}, "If-Match", etag)
	s.Clock.Advance(time.Minute)
	tn.Must(http.StatusOK, "POST", a.Path("/complete"), tn.Runtime, map[string]any{"fencingToken": a.Lease.FencingToken, "state": "succeeded"})
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": "b:" + strings.Repeat("9", 120), "kind": "review",
		"projectId": "p1", "agentId": agent, "stepId": uuid.NewString(), "snapshotId": uuid.NewString()})
	s.Clock.Advance(10 * time.Second)
	b, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	ask(b, map[string]any{"kind": "approval", "recommendation": strings.Repeat("ship it after the review ", 10)})
	// Run C fails with a code longer than its cell.
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": "c", "kind": "review", "projectId": "p1",
		"agentId": agent, "stepId": uuid.NewString(), "snapshotId": uuid.NewString()})
	s.Clock.Advance(12 * time.Second)
	cRun, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	tn.Must(http.StatusOK, "POST", cRun.Path("/complete"), tn.Runtime, map[string]any{"fencingToken": cRun.Lease.FencingToken,
		"state": "failed", "error": map[string]any{"code": errCode, "message": "the upstream did not answer",
			"details": map[string]any{"type": "UpstreamTimeout", "stack": []string{"at call (" + strings.Repeat("deep/", 40) + "tool.ts:12:3)", "at handler (worker.ts:40:9)"}}}})
	// Insights read the roll-ups: bring them up to what has committed.
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			t.Parallel() // each width in a tab of its own, beside the other
			ctx := tab(t)
			do(t, ctx, chromedp.EmulateViewport(width, 900))
			signIn(t, ctx, s, tn.Admin)

			// The runs table: every header, Spent last, inside its scroll box and the screen.
			if width == 1280 {
				do(t, ctx, chromedp.Navigate(s.URL+"/ui/runs"), chromedp.WaitVisible(chromedp.CSS("#runs")))
				if off := eval[[]string](t, ctx, offScreen(`#runs thead th`)); len(off) > 0 {
					t.Errorf("%d px: runs headers off screen: %q", width, off)
				}
			}
			// A run's error code is cut with its state cell: the cell's title names it whole,
			// with the message.
			do(t, ctx, chromedp.Navigate(s.URL+"/ui/runs?outcome=failed"), chromedp.WaitVisible(chromedp.CSS("#runs")))
			if title := eval[string](t, ctx, `document.querySelector("#runs .error-code").title`); title != errCode+": the upstream did not answer" {
				t.Errorf("%d px: the failed run's error reads %q on hover, want its code and message", width, title)
			}

			// The attempt page says why the attempt failed: code, message and the details the
			// SDK sent (its stack), on screen when opened.
			do(t, ctx, chromedp.Navigate(s.URL+"/ui/attempts/"+cRun.Attempt.AttemptID.String()), chromedp.WaitVisible(chromedp.CSS("#timeline")))
			if got := eval[string](t, ctx, `(document.querySelector("#attempt-error") || {textContent: ""}).textContent.replace(/\s+/g, " ").trim()`); !strings.HasPrefix(got, errCode+": the upstream did not answer") ||
				!strings.Contains(got, "UpstreamTimeout") || !strings.Contains(got, "worker.ts:40:9") {
				t.Errorf("%d px: the attempt's error reads %q, want its code, message and details", width, got)
			} else {
				do(t, ctx, chromedp.Click(chromedp.CSS("#attempt-error summary")))
				if off := eval[[]string](t, ctx, offScreen(`#attempt-error pre`)); len(off) > 0 {
					t.Errorf("%d px: the error's details run off screen: %q", width, off)
				}
				shot(t, ctx, fmt.Sprintf("readable-attempt-error-%d", width))
			}

			// The decisions inbox: Subject, Recommendation and Answer of each row on screen.
			do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions?status=all"), chromedp.WaitVisible(chromedp.CSS("#decisions")))
			if n := eval[int](t, ctx, `document.querySelectorAll("#decisions td.answer").length`); n != 4 {
				t.Fatalf("%d px: the inbox lists %d decisions, want 4", width, n)
			}
			if off := eval[[]string](t, ctx, offScreen(`#decisions td.subject, #decisions td.recommendation, #decisions td.answer a`)); len(off) > 0 {
				t.Errorf("%d px: decisions cells off screen: %q", width, off)
			}
			shot(t, ctx, fmt.Sprintf("readable-decisions-%d", width))

			do(t, ctx, chromedp.Navigate(s.URL+"/ui/insights?group=agent"), chromedp.WaitVisible(chromedp.CSS("#t-decisions")))
			shot(t, ctx, fmt.Sprintf("readable-insights-%d", width))
			// Axis labels: the rendered size is the font size times the SVG's scale.
			small := eval[[]string](t, ctx, `[...document.querySelectorAll("svg.chart text")].filter(t => t.getBBox().width > 0).map(t =>
			    [t.textContent, parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a]).filter(([, px]) => px < 10).map(([s, px]) => s + " " + px.toFixed(1) + "px")`)
			if n := eval[int](t, ctx, `document.querySelectorAll("svg.chart text").length`); n == 0 {
				t.Fatalf("%d px: the insights page draws no chart text", width)
			}
			if len(small) > 0 {
				t.Errorf("%d px: chart labels under 10 px: %q", width, small)
			}
			// Each legend's series have colours of their own (one colour, one meaning), and
			// every bar part is drawn in its series' colour, not the SVG default.
			legends := eval[[]string](t, ctx, `[...document.querySelectorAll("ul.legend")].map(u => [...u.querySelectorAll("li")].map(li =>
			    li.textContent.trim() + "=" + getComputedStyle(li.querySelector(".sw")).backgroundColor))`+
				`.filter(l => l.some(x => x.endsWith("rgba(0, 0, 0, 0)")) || new Set(l.map(x => x.split("=")[1])).size < l.length).map(l => l.join(", "))`)
			if len(legends) > 0 {
				t.Errorf("%d px: legends with a colour missing or shared: %q", width, legends)
			}
			uncoloured := eval[[]string](t, ctx, `[...document.querySelectorAll("svg.chart rect[class^='c-']")].filter(r =>
			    getComputedStyle(r).fill === "rgb(0, 0, 0)").map(r => r.getAttribute("class"))`)
			if len(uncoloured) > 0 {
				t.Errorf("%d px: bar parts without a colour: %q", width, uncoloured)
			}
			// The bucket labels of the series tables fit their column.
			cut := eval[[]string](t, ctx, `[...document.querySelectorAll("tr[data-bucket] th")].filter(th => th.scrollWidth > th.clientWidth).map(th =>
			    th.textContent.trim() + " " + th.scrollWidth + ">" + th.clientWidth)`)
			if n := eval[int](t, ctx, `document.querySelectorAll("tr[data-bucket] th").length`); n == 0 {
				t.Fatalf("%d px: the insights page lists no bucket", width)
			}
			if len(cut) > 0 {
				t.Errorf("%d px: bucket labels cut: %q", width, cut)
			}
			// A cut group name has its whole name in its cell's title, and the cell stays bounded.
			cell := eval[[]any](t, ctx, `(() => { const th = document.querySelector('#t-runs-ended-groups tbody th');
			    return [th.title, th.textContent.trim(), th.getBoundingClientRect().width <= th.closest("table").getBoundingClientRect().width / 2]; })()`)
			if cell[0] != agent || cell[1] != agent || cell[2] != true {
				t.Errorf("%d px: the group cell reads %q with title %q (bounded %v), want title %q", width, cell[1], cell[0], cell[2], agent)
			}
			// Claim latency: two series, each from zero, with a legend naming both.
			lat := eval[[]string](t, ctx, `(() => { const svg = document.querySelector('#h-latency').closest('section').querySelector('svg');
			    return [...svg.querySelectorAll('rect.c-p50, rect.c-p95')].map(r => r.getAttribute('class') + '@' + r.getAttribute('x')); })()`)
			if len(lat) != 2 || lat[0] != "c-p50@130" || lat[1] != "c-p95@130" {
				t.Errorf("%d px: claim latency bars %q, want p50 and p95 each from x=130", width, lat)
			}
			legend := eval[string](t, ctx, `document.querySelector('#h-latency').closest('section').querySelector('ul.legend').textContent`)
			if legend != "p50p95" {
				t.Errorf("%d px: claim latency legend %q", width, legend)
			}
			durs := eval[[]string](t, ctx, `[...document.querySelectorAll('#t-claim-latency tbody td')].map(td => td.textContent.trim())`)
			if len(durs) != 3 || durs[0] != "3" || !strings.HasSuffix(durs[1], " s") || !strings.HasSuffix(durs[2], " s") {
				t.Errorf("%d px: claim latency row %q, want a count and two durations in seconds", width, durs)
			}
			// The decisions table: every request is in exactly one column.
			row := eval[map[string]string](t, ctx, `(() => { const heads = [...document.querySelectorAll('#t-decisions thead th')].map(th => th.textContent.trim());
			    const tr = document.querySelector('#t-decisions tbody tr[data-group="approval"]');
			    return Object.fromEntries([...tr.cells].map((c, i) => [heads[i], c.textContent.trim()])); })()`)
			want := map[string]string{"Requested": "4", "Answered": "1", "Pending": "1", "Expired": "1", "Cancelled": "1"}
			for k, v := range want {
				if row[k] != v {
					t.Errorf("%d px: decisions %s = %q, want %s (row %v)", width, k, row[k], v, row)
				}
			}
		})
	}
}

// offScreen lists the elements of sel that end outside the screen or outside the visible
// part of their scroll box.
func offScreen(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(el => {
	    const r = el.getBoundingClientRect(), box = el.closest(".scroll");
	    const right = Math.min(window.innerWidth, box ? box.getBoundingClientRect().right : Infinity);
	    return r.left < 0 || r.right > right + 1 || r.width === 0;
	  }).map(el => el.textContent.trim().slice(0, 30))`, sel)
}
