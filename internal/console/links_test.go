package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestInsightLinksListExactlyTheRowsTheyCount (issue 29 item 2): every bucket row and every
// group row of the runs-ended insight links to a runs list that holds exactly as many runs
// as the row counts, also for runs queued long before the bucket they ended in, grouped by
// error code, release or agent.
func TestInsightLinksListExactlyTheRowsTheyCount(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	start := s.Clock.Now().Truncate(time.Hour)
	// Four runs queued at once, ended an hour apart each with another outcome and error; one
	// more ended in the first hour too; one still queued (counted nowhere).
	type end struct{ state, code string }
	ends := []end{{"failed", "tool_timeout"}, {"succeeded", ""}, {"failed", "tool_timeout"}, {"cancelled", "stopped"}, {"failed", "bad_input"}}
	for i := range ends {
		tn.Enqueue(fmt.Sprintf("links-%d", i), "batch")
	}
	tn.Enqueue("links-queued", "batch")
	s.Clock.Advance(90 * time.Minute)
	for i, e := range ends {
		cl, ok, _ := tn.Claim(600, nil)
		if !ok {
			t.Fatal("claim found nothing")
		}
		body := map[string]any{"fencingToken": cl.Lease.FencingToken, "state": e.state}
		if e.code != "" {
			body["error"] = map[string]any{"code": e.code, "message": "because " + e.code}
		}
		tn.Must(http.StatusOK, "POST", cl.Path("/complete"), tn.Runtime, body)
		if i < 3 {
			s.Clock.Advance(time.Hour)
		}
	}
	// Insights read the roll-ups: bring them up to what has committed.
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _, _ := httpSession(t, s, tn.Admin)
	rowRe := regexp.MustCompile(`<tr data-(?:bucket|group)="([^"]*)"[^>]*><th scope="row"[^>]*>(?:<a href="([^"]*)">)?[^<]*(?:</a>)?</th>(?:<td>\d+</td>)*<td>(\d+)</td></tr>`)
	countRuns := func(href string) int {
		t.Helper()
		code, body := get(t, c, s, html.UnescapeString(href))
		if code != http.StatusOK {
			t.Fatalf("%s: %d", href, code)
		}
		if strings.Contains(body, `class="empty"`) {
			return 0
		}
		tbody := body[strings.Index(body, `<table class="grid" id="runs">`):]
		tbody = tbody[strings.Index(tbody, "<tbody>"):strings.Index(tbody, "</tbody>")]
		return strings.Count(tbody, "<tr>")
	}
	from := start.Format("2006-01-02T15:04:05")
	to := start.Add(6 * time.Hour).Format("2006-01-02T15:04:05")
	for _, group := range []string{"errorCode", "agent", "release", "kind"} {
		code, body := get(t, c, s, "/ui/insights?bucket=1h&from="+from+"&to="+to+"&group="+group)
		if code != http.StatusOK {
			t.Fatalf("insights grouped by %s: %d", group, code)
		}
		table := func(id string) string {
			i := strings.Index(body, `id="`+id+`"`)
			if i < 0 {
				t.Fatalf("no table %s grouped by %s", id, group)
			}
			return body[i : i+strings.Index(body[i:], "</table>")]
		}
		var buckets, groups, linked int
		for _, id := range []string{"t-runs-ended", "t-runs-ended-groups"} {
			for _, m := range rowRe.FindAllStringSubmatch(table(id), -1) {
				total, _ := strconv.Atoi(m[3])
				if id == "t-runs-ended" {
					buckets += total
				} else {
					groups += total
				}
				if m[2] == "" {
					t.Fatalf("grouped by %s, row %q of %s has no link", group, m[1], id)
				}
				linked++
				if n := countRuns(m[2]); n != total {
					t.Errorf("grouped by %s, row %q of %s counts %d runs, its link %s lists %d", group, m[1], id, total, m[2], n)
				}
			}
		}
		if buckets != len(ends) || groups != len(ends) || linked == 0 {
			t.Fatalf("grouped by %s: buckets sum to %d, groups to %d, want %d each", group, buckets, groups, len(ends))
		}
	}
	// The error codes are groups of their own.
	_, body := get(t, c, s, "/ui/insights?bucket=1h&from="+from+"&to="+to+"&group=errorCode")
	for _, want := range []string{`data-group="tool_timeout"`, `data-group="stopped"`, `data-group="bad_input"`} {
		if !strings.Contains(body, want) {
			t.Errorf("insights by error code lack %s", want)
		}
	}
}

// TestDecisionsListNarrowsAsTheInsightLinks: the decisions list takes the decisions
// insight's filters (kind, requested window, run kind) and refuses what it cannot read.
func TestDecisionsListNarrowsAsTheInsightLinks(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("narrow-1", "batch")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	for _, kind := range []string{"approval", "input", "input"} {
		tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": kind})
	}
	c, _, _ := httpSession(t, s, tn.Admin)
	from := s.Clock.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05")
	for q, want := range map[string]int{"kind=approval": 1, "kind=input": 2, "kind=input&requestedFrom=" + from: 2,
		"requestedTo=" + from: 0, "runKind=review": 3, "runKind=other": 0, "agent=agent-1&kind=input": 2, "agent=agent-2": 0} {
		code, body := get(t, c, s, "/ui/decisions?status=all&"+q)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", q, code)
		}
		if n := strings.Count(body, "<tr data-decision="); n != want {
			t.Errorf("%s: %d decisions listed, want %d", q, n, want)
		}
	}
	for _, q := range []string{"kind=vote", "requestedFrom=yesterday"} {
		if code, body := get(t, c, s, "/ui/decisions?status=all&"+q); code != http.StatusBadRequest || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want 400 with the problem", q, code)
		}
	}
}
