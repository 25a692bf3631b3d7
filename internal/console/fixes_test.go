package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestProjectCreatedAndPauseExplained: a project is created from the console (an existing
// id is refused and left alone), and pausing one says what it does.
func TestProjectCreatedAndPauseExplained(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, etag := httpSession(t, s, tn.Admin)
	post := func(path string, form url.Values) *http.Response {
		form.Set("csrf", csrf)
		r, err := c.PostForm(s.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r
	}
	r := post("/ui/projects", url.Values{"projectId": {"made-in-console"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", r.StatusCode)
	}
	var p api.Project
	tn.Must(http.StatusOK, "GET", "/v1/projects/made-in-console", tn.Admin, nil).Decode(t, &p)
	if !p.Active || p.RetentionDays != 365 {
		t.Errorf("created project %+v", p)
	}
	if _, body := get(t, c, s, r.Header.Get("Location")); !strings.Contains(body, "made-in-console created") {
		t.Errorf("no word of the creation on %s", r.Header.Get("Location"))
	}
	for _, bad := range []string{"p1", "a/b", " padded", ""} {
		if r := post("/ui/projects", url.Values{"projectId": {bad}}); r.StatusCode != http.StatusConflict && r.StatusCode != http.StatusBadRequest {
			t.Errorf("create %q: %d, want a refusal", bad, r.StatusCode)
		}
	}
	if tn.Must(http.StatusOK, "GET", "/v1/projects/p1", tn.Admin, nil).Header.Get("ETag") != etag {
		t.Error("refusing to create p1 changed it")
	}

	r = post("/ui/projects/p1", url.Values{"action": {"pause"}, "etag": {etag}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause: %d", r.StatusCode)
	}
	if _, body := get(t, c, s, r.Header.Get("Location")); !strings.Contains(body, "paused: its queued runs will not be offered to claims") {
		t.Errorf("pausing does not say what it does: %s", r.Header.Get("Location"))
	}
}

// TestRunsListFixes: the runs list has a short run id column; the overview's band counts
// link to a band-filtered list that lists that band only; the first page has no link to
// itself, a later one links back to the newest with the same filters; the run page says
// "1 attempt".
func TestRunsListFixes(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	inter := tn.Enqueue("fix-1", "interactive")
	tn.Enqueue("fix-2", "batch")
	c, _, _ := httpSession(t, s, tn.Admin)

	_, overview := get(t, c, s, "/ui/")
	if !strings.Contains(overview, `href="/ui/runs?state=queued&amp;band=interactive"`) {
		t.Errorf("the overview's interactive queued count does not link to the band's list")
	}
	_, list := get(t, c, s, "/ui/runs?state=queued&band=interactive")
	short := inter.RunID.String()[28:]
	if !strings.Contains(list, ">"+short+"</a>") {
		t.Errorf("the list has no short run id %s", short)
	}
	if n := strings.Count(list, `<td class="mono"><a href="/ui/runs/`); n != 1 {
		t.Errorf("the interactive list has %d runs, want 1", n)
	}
	// Runs enqueued together share their UUIDv7 time prefix; their short ids still differ
	// (issue 29 item 5).
	for i := range 30 {
		tn.Enqueue(fmt.Sprintf("fix-many-%d", i), "background")
	}
	_, many := get(t, c, s, "/ui/runs?band=background")
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`title="[0-9a-f-]{36}">([0-9a-f-]+)</a>`).FindAllStringSubmatch(many, -1) {
		seen[m[1]] = true
	}
	if len(seen) != 30 {
		t.Errorf("30 runs enqueued together show %d distinct short ids", len(seen))
	}
	if strings.Contains(list, `id="newest"`) {
		t.Error("the newest page links to itself")
	}
	cursor := base64.RawURLEncoding.EncodeToString([]byte(`{"q":"2099-01-01T00:00:00Z","r":"00000000-0000-0000-0000-000000000000"}`))
	_, later := get(t, c, s, "/ui/runs?state=queued&cursor="+cursor)
	if !strings.Contains(later, `id="newest"`) || !strings.Contains(later, `href="/ui/runs?state=queued" id="newest"`) {
		t.Errorf("a later page has no link to the newest with its filters")
	}
	if st, _ := get(t, c, s, "/ui/runs?band=urgent"); st != http.StatusBadRequest {
		t.Errorf("an unknown band: %d, want 400", st)
	}

	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "charge": true})
	var run api.Run
	tn.Must(http.StatusOK, "GET", "/v1/runs/"+cl.Run.RunID.String(), tn.Admin, nil).Decode(t, &run)
	_, page := get(t, c, s, "/ui/runs/"+run.RunID.String())
	if run.AttemptsSpent != 1 || !strings.Contains(page, "1 attempt spent") || strings.Contains(page, "1 attempts") {
		t.Errorf("a run with %d attempt spent: the page does not say \"1 attempt spent\"", run.AttemptsSpent)
	}
}

// TestDecisionPageLayout: the answer form says what an approval id is and keeps its button
// apart from that field; a decision without an expiry or an answer shows no empty rows.
func TestDecisionPageLayout(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	_, d := askDecision(t, tn, "layout-1")
	c, _, _ := httpSession(t, s, tn.Admin)
	_, page := get(t, c, s, "/ui/decisions/"+d.DecisionID.String())
	for _, want := range []string{`aria-describedby="approval-hint"`, `id="approval-hint">The id (a UUID) of the approval`,
		`<div class="actions"><button type="submit" id="send-answer">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the decision page lacks %q", want)
		}
	}
	for _, empty := range []string{"<dt>Expires</dt>", "<dt>Answered</dt>"} {
		if strings.Contains(page, empty) {
			t.Errorf("the decision page shows an empty %s row", empty)
		}
	}
}

// TestAttemptTimelineEndsWithHowItEnded: the timeline lists the attempt's checkpoint,
// decision and delegation as entries, with a status that is not the phase again, and ends
// with how the attempt ended: released by its holder, or lost to the reaper.
func TestAttemptTimelineEndsWithHowItEnded(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, _, _ := httpSession(t, s, tn.Admin)
	rows := func(attempt string) [][]string {
		t.Helper()
		_, page := get(t, c, s, "/ui/attempts/"+attempt)
		var out [][]string
		for _, tr := range regexp.MustCompile(`(?s)<tr class="k-([a-z]+)">(.*?)</tr>`).FindAllStringSubmatch(page, -1) {
			cells := regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[2], -1)
			row := []string{tr[1]}
			for _, cell := range cells {
				row = append(row, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(cell[1], ""))
			}
			out = append(out, row)
		}
		return out
	}

	cl, _ := askDecision(t, tn, "timeline-1")
	tok := cl.Lease.FencingToken
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": tok,
		"sequence": 1, "phase": "acting", "adapterStateRef": "state://1", "adapterVersion": "1.0", "hash": "h1"})
	tn.Must(http.StatusCreated, "POST", cl.Path("/delegations"), tn.Runtime, map[string]any{"fencingToken": tok,
		"purpose": "look", "child": map[string]any{"subject": "timeline-child", "kind": "review", "projectId": "p1",
			"agentId": "sub", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": tok, "retryAfterSeconds": 3600})
	got := rows(cl.Attempt.AttemptID.String())
	kinds := []string{}
	for _, r := range got {
		kinds = append(kinds, r[0])
	}
	// At one time (the clock stands still), entries order by kind, the end last.
	if strings.Join(kinds, ",") != "checkpoint,decision,delegation,end" {
		t.Fatalf("timeline kinds %v, want checkpoint, decision, delegation, end", kinds)
	}
	if cp := got[0]; cp[5] == "acting" {
		t.Errorf("the checkpoint's status repeats its phase: %v", cp)
	}
	if end := got[3]; !strings.HasPrefix(end[4], "released") || end[5] != "released" {
		t.Errorf("the last entry %v, want how it ended: released", end)
	}

	tn.Enqueue("timeline-2", "interactive")
	lost, ok, _ := tn.Claim(60, nil)
	if !ok || lost.Run.Subject != "timeline-2" {
		t.Fatalf("claim: %v %+v", ok, lost.Run)
	}
	s.Clock.Advance(2 * time.Minute)
	if _, err := s.App.Runs.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = rows(lost.Attempt.AttemptID.String())
	if len(got) != 1 || got[0][0] != "end" || !strings.HasPrefix(got[0][4], "lost: the lease") || got[0][5] != "lost" {
		t.Errorf("a lost attempt's timeline %v, want one end entry: lost", got)
	}
}

// TestRunPageReadsDelegationsAndChainOnce: the run page costs the same statements for a run
// with three attempts, a delegation and a chain of continuations as for a run with one
// attempt and none of those (one read for the delegations, one for the chain), and lists
// them all.
func TestRunPageReadsDelegationsAndChainOnce(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, _, _ := httpSession(t, s, tn.Admin)
	review := map[string]any{"kinds": []string{"review"}}
	claim := func() apitest.Claimed {
		t.Helper()
		cl, ok, _ := tn.Claim(600, review)
		if !ok {
			t.Fatal("claim found nothing")
		}
		return cl
	}
	complete := func(cl apitest.Claimed) {
		tn.Must(http.StatusOK, "POST", cl.Path("/complete"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "state": "succeeded"})
	}

	single := tn.Enqueue("once-1", "batch")
	complete(claim())

	long := tn.Enqueue("once-2", "batch")
	for i := range 3 {
		cl := claim()
		if i == 0 {
			tn.Must(http.StatusCreated, "POST", cl.Path("/delegations"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
				"purpose": "look", "child": map[string]any{"subject": "once-child", "kind": "child", "projectId": "p1",
					"agentId": "sub", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
		}
		if i < 2 {
			tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "retryAfterSeconds": 0})
		} else {
			complete(cl)
		}
	}
	var next api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs/"+long.RunID.String()+"/continue", tn.Runtime, nil).Decode(t, &next)
	complete(claim())
	var last api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs/"+next.RunID.String()+"/continue", tn.Runtime, nil).Decode(t, &last)

	// The fewest statements of three views: writes made in the background meanwhile (a key's
	// last use, recorded after its request) land in the count of whichever view they overlap,
	// never in all three, while the page's own reads are the same every time.
	count := func(run api.Run) (int, string) {
		t.Helper()
		fewest, page := -1, ""
		for range 3 {
			stop := apitest.Statements(s.DB)
			_, page = get(t, c, s, "/ui/runs/"+run.RunID.String())
			if n := len(stop()); fewest < 0 || n < fewest {
				fewest = n
			}
		}
		return fewest, page
	}
	few, _ := count(single)
	many, page := count(long)
	if many != few {
		t.Errorf("the run page sends %d statements for a run with 3 attempts, a delegation and a chain, %d for a run with 1 attempt", many, few)
	}
	for _, want := range []string{"/ui/runs/" + next.RunID.String(), "/ui/runs/" + last.RunID.String(), "once-child", "<b>this run</b>"} {
		if want == "once-child" {
			want = ">sub<"
		}
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<span class="state a-`); n != 3 {
		t.Errorf("the run page lists %d attempts, want 3", n)
	}
}
