package console_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// TestSignIn: a bad key and a runtime key are refused with a message that says why; an
// admin key opens the overview of its tenant.
func TestSignIn(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	if l := location(t, ctx); !strings.HasSuffix(l, "/ui/signin") {
		t.Fatalf("without a session /ui/ went to %s, want the sign-in page", l)
	}
	shot(t, ctx, "signin")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#key"), tn.Runtime))
	clickNav(t, ctx, "#signin", "#message")
	if m := text(t, ctx, "#message"); !strings.Contains(m, "runtime key") || !strings.Contains(m, "admin key") {
		t.Fatalf("a runtime key got %q", m)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#key"), "ldg_0123456789abcdef_nope"))
	clickNav(t, ctx, "#signin", "#message")
	if m := text(t, ctx, "#message"); !strings.Contains(m, "not valid") {
		t.Fatalf("a bad key got %q", m)
	}
	signIn(t, ctx, s, tn.Admin)
	if got := text(t, ctx, "#tenant"); got != tn.ID {
		t.Fatalf("signed in as tenant %q, want %q", got, tn.ID)
	}
}

// apiCount counts a listing's items through the API, following every page.
func apiCount(t *testing.T, tn *apitest.Tenant, path string, match func(map[string]any) bool) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Items      []map[string]any `json:"items"`
			NextCursor string           `json:"nextCursor"`
		}
		tn.Must(http.StatusOK, "GET", p, tn.Admin, nil).Decode(t, &page)
		for _, it := range page.Items {
			if match == nil || match(it) {
				n++
			}
		}
		if page.NextCursor == "" {
			return n
		}
		cursor = page.NextCursor
	}
}

// TestOverviewMatchesAPI: every number of the overview equals what the API lists.
func TestOverviewMatchesAPI(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	for i, band := range []string{"interactive", "batch", "batch", "background", "background", "background", "batch"} {
		tn.Enqueue(fmt.Sprintf("ov-%d", i), band)
	}
	var held []apitest.Claimed
	for i := 0; i < 3; i++ {
		cl, ok, _ := tn.Claim(600, nil)
		if !ok {
			t.Fatal("claim found nothing")
		}
		held = append(held, cl)
	}
	tn.Must(http.StatusCreated, "POST", held[0].Path("/decisions"), tn.Runtime,
		map[string]any{"fencingToken": held[0].Lease.FencingToken, "kind": "approval"})
	s.Clock.Advance(90_000_000_000) // 90 s: the queued runs wait past their due time

	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#bands")))
	shot(t, ctx, "overview")
	num := func(sel string) int {
		n, err := strconv.Atoi(text(t, ctx, sel))
		if err != nil {
			t.Fatalf("%s is not a number: %v", sel, err)
		}
		return n
	}
	if got, want := num("#queued-total"), apiCount(t, tn, "/v1/runs?state=queued&limit=2", nil); got != want {
		t.Errorf("queued: console %d, API %d", got, want)
	}
	if got, want := num("#leased-total"), apiCount(t, tn, "/v1/runs?state=leased&limit=2", nil); got != want {
		t.Errorf("leased: console %d, API %d", got, want)
	}
	if got, want := num("#pending"), apiCount(t, tn, "/v1/decisions?status=pending&limit=2", nil); got != want || got != 1 {
		t.Errorf("pending decisions: console %d, API %d (want 1)", got, want)
	}
	for _, band := range []string{"interactive", "batch", "background"} {
		for _, st := range []string{"queued", "leased"} {
			sel := map[string]string{"queued": "a.q", "leased": "a.l"}[st]
			got := num(fmt.Sprintf(`#bands tr[data-band=%q] %s`, band, sel))
			want := apiCount(t, tn, "/v1/runs?state="+st+"&limit=3", func(it map[string]any) bool { return it["band"] == band })
			if got != want {
				t.Errorf("%s %s: console %d, API %d", st, band, got, want)
			}
		}
	}
	if got := num(`#projects tr[data-project="p1"] td.q`); got != 4 {
		t.Errorf("p1 queued %d, want 4", got)
	}
	if lag := text(t, ctx, "#claim-lag"); lag != "1 min 30 s" {
		t.Errorf("claim lag %q, want 1 min 30 s", lag)
	}
	// The live block refreshes in place (htmx): a run enqueued now appears without a reload.
	tn.Enqueue("ov-late", "interactive")
	want := strconv.Itoa(num("#queued-total") + 1)
	waitFor(t, ctx, fmt.Sprintf(`document.getElementById("queued-total").textContent === %q`, want))
	// A phone-sized screen reads the same page.
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#bands")))
	shot(t, ctx, "overview-phone")
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("on a 390 px screen the overview is %d px wide", w)
	}
}

// TestRunTimeline: a run's page lists its attempt, and the attempt's timeline shows its
// checkpoints and calls (with the call's duration) in time order.
func TestRunTimeline(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	run := tn.Enqueue("timeline-1", "batch")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok || cl.Run.RunID != run.RunID {
		t.Fatal("claim did not lease the run")
	}
	tok := cl.Lease.FencingToken
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": tok,
		"sequence": 1, "phase": "planning", "adapterStateRef": "state://plan-1", "adapterVersion": "1.0", "hash": "h1"})
	s.Clock.Advance(1_000_000_000)
	var call struct {
		CallID string `json:"callId"`
	}
	tn.Must(http.StatusCreated, "POST", cl.Path("/calls"), tn.Runtime, map[string]any{"fencingToken": tok,
		"sequence": 1, "kind": "model", "target": "gpt-review", "requestHash": "rq1"}).Decode(t, &call)
	s.Clock.Advance(2_500_000_000)
	tn.Must(http.StatusOK, "PATCH", cl.Path("/calls/"+call.CallID), tn.Runtime, map[string]any{"fencingToken": tok, "status": "succeeded"})
	s.Clock.Advance(1_000_000_000)
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": tok,
		"sequence": 2, "phase": "acting", "adapterStateRef": "state://act-2", "adapterVersion": "1.0", "hash": "h2"})

	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/runs?subject=timeline-1"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	shot(t, ctx, "runs")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs a[href="/ui/runs/`+run.RunID.String()+`"]`)), chromedp.WaitVisible(chromedp.CSS("#attempts")))
	shot(t, ctx, "run")
	if st := text(t, ctx, "#run-state"); st != "leased" {
		t.Errorf("run state %q", st)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#attempts a[href="/ui/attempts/`+cl.Attempt.AttemptID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")))
	shot(t, ctx, "attempt")
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()).join("|"))`)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^\S+ \S+\|checkpoint\|1\|phase planning · state state://plan-1\|resumable\|$`),
		regexp.MustCompile(`^\S+ \S+\|call\|1\|model gpt-review\|succeeded\|2\.5 s$`),
		regexp.MustCompile(`^\S+ \S+\|checkpoint\|2\|phase acting · state state://act-2\|resumable\|$`),
	}
	if len(rows) != len(want) {
		t.Fatalf("timeline rows %q, want %d", rows, len(want))
	}
	for i, re := range want {
		if !re.MatchString(rows[i]) {
			t.Errorf("timeline row %d = %q, want %s", i, rows[i], re)
		}
	}
}

type decision struct {
	DecisionID uuid.UUID `json:"decisionId"`
	Status     string    `json:"status"`
	AnsweredBy string    `json:"answeredBy"`
}

func askDecision(t *testing.T, tn *apitest.Tenant, subject string) (apitest.Claimed, decision) {
	t.Helper()
	tn.Enqueue(subject, "interactive")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	var d decision
	tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"kind": "approval", "recommendation": "ship it"}).Decode(t, &d)
	return cl, d
}

// TestDecisionAnsweredFromInbox: the inbox lists the pending decision; its form answers it.
func TestDecisionAnsweredFromInbox(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	_, d := askDecision(t, tn, "dec-1")
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	// The project filter keeps the decisions of that project's runs only.
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions?project=no-such-project"), chromedp.WaitVisible(chromedp.CSS("#no-decisions")))
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions"), chromedp.WaitVisible(chromedp.CSS("#decisions")))
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#f-project"), "p1"))
	clickNav(t, ctx, ".filters button", "#decisions")
	row := `tr[data-decision="` + d.DecisionID.String() + `"]`
	if p := text(t, ctx, row+" td.project"); p != "p1" {
		t.Fatalf("the inbox row names project %q, want p1", p)
	}
	shot(t, ctx, "decisions")
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" a.open")), chromedp.WaitVisible(chromedp.CSS("#approve")))
	shot(t, ctx, "decision")
	do(t, ctx, chromedp.Click(chromedp.CSS("#approve")), chromedp.SendKeys(chromedp.CSS("#answer-text"), "looks right"))
	clickNav(t, ctx, "#send-answer", "#message")
	if m := text(t, ctx, "#message"); m != "Answer recorded." {
		t.Fatalf("after answering: %q", m)
	}
	var got decision
	tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d.DecisionID.String(), tn.Admin, nil).Decode(t, &got)
	if got.Status != "approved" || got.AnsweredBy == "" {
		t.Fatalf("the API reads the decision as %+v", got)
	}
	if st := text(t, ctx, "#decision-status"); st != "approved" {
		t.Errorf("the page shows %q", st)
	}
}

// TestStaleAnswerShowsChange: an answer sent from a page opened before the decision
// changed is refused with "changed since you opened it" and the decision as it is now:
// when another admin answered first, and when the version the page carries is old (412).
func TestStaleAnswerShowsChange(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	_, d1 := askDecision(t, tn, "stale-1")
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions/"+d1.DecisionID.String()), chromedp.WaitVisible(chromedp.CSS("#approve")))
	// Another admin answers through the API while the page is open.
	etag := tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d1.DecisionID.String(), tn.Admin, nil).Header.Get("ETag")
	tn.Must(http.StatusOK, "POST", "/v1/decisions/"+d1.DecisionID.String()+"/answer", tn.Admin,
		map[string]any{"status": "rejected"}, "If-Match", etag)
	do(t, ctx, chromedp.Click(chromedp.CSS("#approve")))
	clickNav(t, ctx, "#send-answer", "#message")
	shot(t, ctx, "decision-changed")
	if m := text(t, ctx, "#message"); !strings.Contains(m, "changed since you opened it") {
		t.Fatalf("a late answer showed %q", m)
	}
	if st := text(t, ctx, "#decision-status"); st != "rejected" {
		t.Errorf("the page shows %q, want the current state rejected", st)
	}

	// The page's version is old while the decision is still pending: a 412 from the store.
	_, d2 := askDecision(t, tn, "stale-2")
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions/"+d2.DecisionID.String()), chromedp.WaitVisible(chromedp.CSS("#approve")),
		chromedp.SetValue(chromedp.CSS(`input[name="etag"]`), `"0000000000000001"`),
		chromedp.Click(chromedp.CSS("#approve")))
	clickNav(t, ctx, "#send-answer", "#message")
	if m := text(t, ctx, "#message"); !strings.Contains(m, "changed since you opened it") {
		t.Fatalf("an answer with an old version showed %q", m)
	}
	var got decision
	tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d2.DecisionID.String(), tn.Admin, nil).Decode(t, &got)
	if got.Status != "pending" {
		t.Fatalf("a refused answer changed the decision: %+v", got)
	}
}

// TestProjectPausedAndReleaseMoved: pausing a project from the console stops its runs
// being claimed; a release moves state after a confirmation.
func TestProjectPausedAndReleaseMoved(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("paused-1", "batch")
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/projects"), chromedp.WaitVisible(chromedp.CSS("#projects")))
	shot(t, ctx, "projects")
	clickNav(t, ctx, `tr[data-project="p1"] button[value="pause"]`, `tr[data-project="p1"] button[value="resume"]`)
	var p struct {
		Active bool `json:"active"`
	}
	tn.Must(http.StatusOK, "GET", "/v1/projects/p1", tn.Admin, nil).Decode(t, &p)
	if p.Active {
		t.Fatal("the API still reads p1 as active")
	}
	if _, ok, _ := tn.Claim(60, nil); ok {
		t.Fatal("a run of a paused project was claimed")
	}

	rel := "rel-" + tn.ID
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/releases"), chromedp.WaitVisible(chromedp.CSS("#releases")))
	shot(t, ctx, "releases")
	do(t, ctx, chromedp.Click(chromedp.CSS(`tr[data-release="`+rel+` 1.0"] a[href$="to=draining"]`)), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shot(t, ctx, "release-confirm")
	clickNav(t, ctx, "#confirm", "#message")
	var r struct {
		State string `json:"state"`
	}
	tn.Must(http.StatusOK, "GET", "/v1/releases/"+rel+"/adapters/1.0", tn.Admin, nil).Decode(t, &r)
	if r.State != "draining" {
		t.Fatalf("release state %q after the move, want draining", r.State)
	}
}

// TestOtherTenantSeesNothing: another tenant's admin sees none of the first tenant's rows,
// and its ids answer as missing.
func TestOtherTenantSeesNothing(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	a, b := s.NewTenant(t), s.NewTenant(t)
	run := a.Enqueue("secret-subject", "batch")
	cl, d := askDecision(t, a, "secret-decision")
	a.Must(http.StatusCreated, "PUT", "/v1/schedules/secret-schedule", a.Admin, map[string]any{"cron": "@hourly",
		"run": map[string]any{"subject": "secret-subject", "kind": "k", "projectId": "p1", "agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	ctx := tab(t)
	signIn(t, ctx, s, b.Admin)
	for _, p := range []string{"/ui/", "/ui/runs", "/ui/decisions?status=all", "/ui/releases", "/ui/projects", "/ui/schedules"} {
		do(t, ctx, chromedp.Navigate(s.URL+p), chromedp.WaitVisible(chromedp.CSS("main")))
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{a.ID, "secret-subject", "secret-decision", "secret-schedule", run.RunID.String(), d.DecisionID.String()} {
			if strings.Contains(html, secret) {
				t.Errorf("%s shows tenant A's %q", p, secret)
			}
		}
	}
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#queued-total")))
	for _, sel := range []string{"#queued-total", "#leased-total", "#pending"} {
		if n := text(t, ctx, sel); n != "0" {
			t.Errorf("tenant B's overview counts %s in %s", n, sel)
		}
	}
	for _, p := range []string{"/ui/runs/" + run.RunID.String(), "/ui/attempts/" + cl.Attempt.AttemptID.String(), "/ui/decisions/" + d.DecisionID.String(),
		"/ui/releases/rel-" + a.ID + "/1.0/move?to=retired"} {
		do(t, ctx, chromedp.Navigate(s.URL+p), chromedp.WaitVisible(chromedp.CSS("#message")))
		if m := text(t, ctx, "#message"); !strings.Contains(m, "nothing here") {
			t.Errorf("%s showed %q, want the not-found message", p, m)
		}
	}
}

// TestSignOutEndsSession: signing out ends the session on the server: the cookie it had
// opens nothing any more, from the browser or replayed.
func TestSignOutEndsSession(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{s.URL + "/ui/"}})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range res.Cookies {
		if c.Name == "ledger_console" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict {
		t.Fatalf("session cookie %+v, want HttpOnly and SameSite=Strict", session)
	}
	if eval[string](t, ctx, `document.cookie`) != "" {
		t.Fatal("page script can read the session cookie")
	}
	// The cookie opens the console from outside the browser too, until sign-out.
	replay := func() int {
		req, _ := http.NewRequest("GET", s.URL+"/ui/runs", nil)
		req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if st := replay(); st != http.StatusOK {
		t.Fatalf("the live session cookie answered %d", st)
	}
	clickNav(t, ctx, "#signout", "#key")
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/runs"), chromedp.WaitVisible(chromedp.CSS("#key")))
	if l := location(t, ctx); !strings.HasSuffix(l, "/ui/signin") {
		t.Fatalf("after sign-out /ui/runs went to %s", l)
	}
	if st := replay(); st != http.StatusSeeOther {
		t.Fatalf("the signed-out cookie, replayed, answered %d, want 303 to the sign-in page", st)
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// httpSession signs in with plain HTTP and returns a client holding the session cookie
// and the CSRF token of the projects page.
func httpSession(t *testing.T, s *apitest.Stack, key string) (*http.Client, string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}
	get := func(path string) string {
		r, err := c.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	tok := regexp.MustCompile(`name="signin" value="([^"]+)"`).FindStringSubmatch(get("/ui/signin"))
	if tok == nil {
		t.Fatal("no sign-in token on the sign-in page")
	}
	r, err := c.PostForm(s.URL+"/ui/signin", url.Values{"signin": {tok[1]}, "key": {key}})
	if err != nil || r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %v %v", r, err)
	}
	r.Body.Close()
	page := get("/ui/projects")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	etag := regexp.MustCompile(`name="etag" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil || etag == nil {
		t.Fatalf("no CSRF token or ETag on the projects page")
	}
	return c, csrf[1], strings.ReplaceAll(etag[1], "&#34;", `"`)
}

// TestFormWithoutCSRFRefused: a console POST without the session's CSRF token, or with
// another, is refused and changes nothing; the same form with it works. Sign-in itself
// needs the token its form carries.
func TestFormWithoutCSRFRefused(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, etag := httpSession(t, s, tn.Admin)
	post := func(form url.Values) int {
		r, err := c.PostForm(s.URL+"/ui/projects/p1", form)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	active := func() bool {
		var p struct {
			Active bool `json:"active"`
		}
		tn.Must(http.StatusOK, "GET", "/v1/projects/p1", tn.Admin, nil).Decode(t, &p)
		return p.Active
	}
	if st := post(url.Values{"action": {"pause"}, "etag": {etag}}); st != http.StatusForbidden {
		t.Errorf("without a CSRF token: %d, want 403", st)
	}
	if st := post(url.Values{"action": {"pause"}, "etag": {etag}, "csrf": {"AAAA" + csrf[4:]}}); st != http.StatusForbidden {
		t.Errorf("with a wrong CSRF token: %d, want 403", st)
	}
	if !active() {
		t.Fatal("a refused form paused the project")
	}
	if st := post(url.Values{"action": {"pause"}, "etag": {etag}, "csrf": {csrf}}); st != http.StatusSeeOther {
		t.Fatalf("with its CSRF token: %d, want 303", st)
	}
	if active() {
		t.Fatal("the accepted form did not pause the project")
	}
	// A sign-in posted without the form's token (a login-CSRF attempt) is refused.
	r, err := noRedirect.PostForm(s.URL+"/ui/signin", url.Values{"key": {tn.Admin}})
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-in without its token: %d, want 403", r.StatusCode)
	}
}

// TestPagesFitLaptopAndPhone walks every page with real rows (long identifiers, a pending
// decision, a delegated child) on a laptop and on a phone: the page is never wider than the
// screen (a wide table scrolls in its own box), no column header is cut, and no column of
// a fixed width (times, states, counts, buttons) cuts what it shows; only identifier and
// free-text columns may end in an ellipsis. The decision page names what it decides on.
func TestPagesFitLaptopAndPhone(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	long := strings.Repeat("project-with-a-long-name-", 3)[:64]
	tn.Must(http.StatusCreated, "PUT", "/v1/projects/"+long, tn.Admin, map[string]any{})
	var run api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{
		"subject": "review:" + strings.Repeat("9", 200), "kind": "a-kind-with-a-rather-long-name", "projectId": long,
		"agentId": "an-agent-with-an-even-longer-name-" + strings.Repeat("x", 60), "stepId": uuid.NewString(), "snapshotId": uuid.NewString(),
		"band": "background",
	}).Decode(t, &run)
	cl, ok, _ := tn.Claim(600, nil)
	if !ok || cl.Run.RunID != run.RunID {
		t.Fatal("claim did not lease the run")
	}
	tok := cl.Lease.FencingToken
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": tok,
		"sequence": 1, "phase": "awaiting_decision", "adapterStateRef": "state://" + strings.Repeat("s", 300), "adapterVersion": "1.0", "hash": "h1"})
	tn.Must(http.StatusCreated, "POST", cl.Path("/delegations"), tn.Runtime, map[string]any{"fencingToken": tok,
		"purpose": strings.Repeat("look into it ", 20), "child": map[string]any{"subject": "child-1", "kind": "review",
			"projectId": "p1", "agentId": "sub-agent", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	var d decision
	tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": tok,
		"kind": "approval", "recommendation": strings.Repeat("ship it after the review ", 20), "expiresInSeconds": 86400}).Decode(t, &d)

	tn.Must(http.StatusCreated, "PUT", "/v1/schedules/"+strings.Repeat("schedule-", 14), tn.Admin, map[string]any{
		"cron": "0 2 * * MON-FRI", "timezone": "America/Argentina/ComodRivadavia", "description": strings.Repeat("nightly evaluation ", 20),
		"run": map[string]any{"subject": "nightly", "kind": "eval", "projectId": long, "agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	pages := []string{"/ui/", "/ui/runs", "/ui/runs/" + run.RunID.String(), "/ui/attempts/" + cl.Attempt.AttemptID.String(),
		"/ui/decisions?status=all", "/ui/decisions/" + d.DecisionID.String(), "/ui/releases", "/ui/insights", "/ui/schedules", "/ui/projects"}
	// cut lists what does not fit: the page's overflow, cut headers, and cut cells of
	// fixed-width columns (a <col> with a class other than w-id or w-name).
	const cut = `(() => {
	  const out = [];
	  if (document.documentElement.scrollWidth > window.innerWidth) out.push("page " + document.documentElement.scrollWidth + "px wide");
	  for (const table of document.querySelectorAll("table.grid")) {
	    const cols = [...table.querySelectorAll("col")].map(c => c.className);
	    for (const row of table.rows) {
	      [...row.cells].forEach((cell, i) => {
	        const flexible = !cols[i] || cols[i] === "w-id" || cols[i] === "w-name";
	        if ((cell.tagName === "TH" && row.parentElement.tagName === "THEAD" || !flexible) && cell.scrollWidth > cell.clientWidth + 1)
	          out.push(table.id + ": " + cell.textContent.trim().slice(0, 40));
	      });
	    }
	  }
	  return out;
	})()`
	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			t.Parallel() // each width in a tab of its own, beside the other
			ctx := tab(t)
			do(t, ctx, chromedp.EmulateViewport(width, 900))
			signIn(t, ctx, s, tn.Admin)
			for _, p := range pages {
				do(t, ctx, chromedp.Navigate(s.URL+p), chromedp.WaitVisible(chromedp.CSS("main")))
				if bad := eval[[]string](t, ctx, cut); len(bad) > 0 {
					t.Errorf("%d px, %s: %q", width, p, bad)
				}
			}
			// Pausing is what the projects page is for: its button shows without scrolling.
			if right := eval[float64](t, ctx, `document.querySelector('#projects button[value="pause"]').getBoundingClientRect().right`); right > float64(width) {
				t.Errorf("%d px: the Pause button ends at %.0f px, off the screen", width, right)
			}
		})
	}

	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/decisions/"+d.DecisionID.String()), chromedp.WaitVisible(chromedp.CSS("#decision")))
	if p := text(t, ctx, "#decision-project"); p != long {
		t.Errorf("the decision page names project %q, want %q", p, long)
	}
	if href := eval[string](t, ctx, `document.getElementById("decision-run").getAttribute("href")`); href != "/ui/runs/"+run.RunID.String() {
		t.Errorf("the decision page links its subject to %q, want the run", href)
	}
}

// TestBadSessionCookiesSpendTheAuthBudget is issue 17 item 3 for the console: random session
// cookies spend the client address's failed-authentication budget, as bad keys do, so past
// it they cost no database read (2,000 cost 2,000 reads before); a session good on this
// replica keeps working from that address, and signing in again with a valid key works.
func TestBadSessionCookiesSpendTheAuthBudget(t *testing.T) {
	t.Parallel()
	const budget = 5
	s := apitest.New(t, apitest.Config{App: app.Config{Limits: admission.Limits{AuthFailures: budget, AuthFailureWindow: time.Hour}}, Serve: true})
	tn := s.NewTenant(t)
	signedIn, _, _ := httpSession(t, s, tn.Admin)

	var statements atomic.Int32
	s.DB.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error {
		statements.Add(1)
		return nil
	})
	const tries = 60
	for range tries {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		req, _ := http.NewRequest("GET", s.URL+"/ui/runs", nil)
		req.AddCookie(&http.Cookie{Name: "ledger_console", Value: base64.RawURLEncoding.EncodeToString(secret) + "." + tn.ID})
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusSeeOther {
			t.Fatalf("a random session cookie answered %d, want 303 to the sign-in page", r.StatusCode)
		}
	}
	s.DB.SetStatementHook(nil)
	// Each lookup within the budget is a transaction of at most a couple of statements.
	if n := statements.Load(); n > 2*budget {
		t.Fatalf("%d random cookies cost %d statements, want at most %d (the budget's lookups)", tries, n, 2*budget)
	}
	r, err := signedIn.Get(s.URL + "/ui/runs")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("the signed-in session from the same address answered %d", r.StatusCode)
	}
	// A new sign-in from the address works: the key's id exists, so it is checked.
	httpSession(t, s, tn.Admin)
}

// TestSchedulesPage: the page lists a schedule with its next firing and the run its last
// firing enqueued; its pause and resume buttons change the schedule as the API reads it.
func TestSchedulesPage(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true, Epoch: time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)})
	tn := s.NewTenant(t)
	tn.Must(http.StatusCreated, "PUT", "/v1/schedules/triage", tn.Admin, map[string]any{"cron": "* * * * *", "description": "triage new issues",
		"run": map[string]any{"subject": "triage", "kind": "triage", "projectId": "p1", "agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	s.Clock.Advance(time.Minute)
	if r, err := s.App.Scheduler.Tick(context.Background()); err != nil || r.Fired != 1 {
		t.Fatalf("tick: %+v %v", r, err)
	}
	var sc api.Schedule
	tn.Must(http.StatusOK, "GET", "/v1/schedules/triage", tn.Admin, nil).Decode(t, &sc)
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedules")))
	shot(t, ctx, "schedules")
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-schedule="triage"]`)))
	if err != nil {
		t.Fatal(err)
	}
	// A firing's run shows its id's random tail, as the runs list does (issue 29 item 5).
	fired := sc.LastFirings[0].RunID.String()
	for _, want := range []string{"2026-01-01 12:02:00.000", "2026-01-01 12:01:00.000", fired[len(fired)-8:], "active"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the row %q lacks %q", text, want)
		}
	}
	clickNav(t, ctx, `tr[data-schedule="triage"] button[value="pause"]`, `tr[data-schedule="triage"] button[value="resume"]`)
	sc = api.Schedule{}
	tn.Must(http.StatusOK, "GET", "/v1/schedules/triage", tn.Admin, nil).Decode(t, &sc)
	if !sc.Paused || sc.NextFireAt != nil || sc.Description == nil || sc.Run.Subject != "triage" {
		t.Fatalf("after pause the API reads %+v", sc)
	}
	clickNav(t, ctx, `tr[data-schedule="triage"] button[value="resume"]`, `tr[data-schedule="triage"] button[value="pause"]`)
	sc = api.Schedule{}
	tn.Must(http.StatusOK, "GET", "/v1/schedules/triage", tn.Admin, nil).Decode(t, &sc)
	if sc.Paused || sc.NextFireAt == nil {
		t.Fatalf("after resume the API reads %+v", sc)
	}
}
