package console_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/strictjson"
)

// get fetches path with c and returns the status and body.
func get(t *testing.T, c *http.Client, s *apitest.Stack, path string) (int, string) {
	t.Helper()
	r, err := c.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// TestStaticDirectoriesNotListed: the static root and any directory under it answer 404,
// not a listing; the files themselves are served.
func TestStaticDirectoriesNotListed(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	for _, p := range []string{"/ui/static/", "/ui/static/.", "/ui/static//", "/ui/static/./", "/ui/static/nope.css"} {
		st, body := get(t, noRedirect, s, p)
		if st != http.StatusNotFound || strings.Contains(body, `href="console.css"`) {
			t.Errorf("GET %s: %d, want 404 without a listing: %.200s", p, st, body)
		}
	}
	if st, body := get(t, noRedirect, s, "/ui/static/console.css"); st != http.StatusOK || body == "" {
		t.Errorf("GET console.css: %d", st)
	}
}

// TestCSRFFromBodyOnlyAndSameOrigin: a console POST carrying its CSRF token (and every
// other field) in the query string is refused, and so is one a browser marks as coming
// from another origin (Sec-Fetch-Site, or Origin against Host), sign-in included; nothing
// changes. The same form, in the body, from the console's own origin, works.
func TestCSRFFromBodyOnlyAndSameOrigin(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, etag := httpSession(t, s, tn.Admin)
	form := url.Values{"action": {"pause"}, "etag": {etag}, "csrf": {csrf}}
	post := func(path, query string, body url.Values, header ...string) int {
		req, err := http.NewRequest("POST", s.URL+path+query, strings.NewReader(body.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		r, err := c.Do(req)
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
	refused := []struct {
		name   string
		query  string
		body   url.Values
		header []string
	}{
		{"everything in the query string", "?" + form.Encode(), url.Values{}, nil},
		{"the token in the query string", "?csrf=" + url.QueryEscape(csrf), url.Values{"action": {"pause"}, "etag": {etag}}, nil},
		{"Origin of another site", "", form, []string{"Origin", "https://evil.example"}},
		{"Origin of another port", "", form, []string{"Origin", strings.Replace(s.URL, "127.0.0.1:", "127.0.0.1:1", 1)}},
		{"Origin null", "", form, []string{"Origin", "null"}},
		{"Sec-Fetch-Site cross-site", "", form, []string{"Sec-Fetch-Site", "cross-site"}},
		{"Sec-Fetch-Site same-site", "", form, []string{"Sec-Fetch-Site", "same-site", "Origin", s.URL}},
	}
	for _, tc := range refused {
		if st := post("/ui/projects/p1", tc.query, tc.body, tc.header...); st != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, st)
		}
		if !active() {
			t.Fatalf("%s: a refused form paused the project", tc.name)
		}
	}
	// A sign-in from another site is refused before the key is looked at.
	req, _ := http.NewRequest("POST", s.URL+"/ui/signin", strings.NewReader(url.Values{"key": {tn.Admin}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r, err := noRedirect.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site sign-in: %v %v, want 403", r, err)
	} else {
		r.Body.Close()
	}
	if st := post("/ui/projects/p1", "", form, "Origin", s.URL, "Sec-Fetch-Site", "same-origin"); st != http.StatusSeeOther {
		t.Fatalf("the form from the console's own origin: %d, want 303", st)
	}
	if active() {
		t.Fatal("the accepted form did not pause the project")
	}
}

// TestPagingWalksEveryList walks every listing of the console to its last page by its
// "next" link, with a filter on where the list has one, and counts the rows against the
// API: no row twice, none missed, the filter kept on every page.
func TestPagingWalksEveryList(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	for i := 0; i < 60; i++ {
		tn.Must(http.StatusCreated, "PUT", fmt.Sprintf("/v1/projects/pg-%02d", i), tn.Admin, map[string]any{})
	}
	tn.Must(http.StatusCreated, "PUT", "/v1/projects/pg", tn.Admin, map[string]any{})
	enqueue := func(project, subject string) {
		tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": subject, "kind": "review",
			"projectId": project, "agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "band": "interactive"})
	}
	enqueue("pg", "pg-held")
	cl, ok, _ := tn.Claim(3600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	for i := 0; i < 110; i++ {
		enqueue("pg", fmt.Sprintf("pg-%03d", i))
		if i%10 == 0 {
			enqueue("p1", fmt.Sprintf("p1-%03d", i))
		}
	}
	for i := 0; i < 60; i++ {
		tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": "approval"})
	}
	for i := 1; i <= 150; i++ {
		tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
			"sequence": i, "phase": "acting", "adapterStateRef": "s", "adapterVersion": "1.0", "hash": fmt.Sprint(i)})
	}
	refs := []byte(`["oci://agents/reviewer@sha256:abc"]`)
	canon, err := releases.Canonicalize(refs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 55; i++ {
		tn.Must(http.StatusCreated, "PUT", fmt.Sprintf("/v1/releases/pg-rel-%s-%02d/adapters/1.0", tn.ID, i), tn.Runtime,
			map[string]any{"manifestHash": releases.ManifestHash(canon), "contentRefs": json.RawMessage(refs), "state": "verified"})
	}
	for i := 0; i < 55; i++ {
		tn.Must(http.StatusCreated, "PUT", fmt.Sprintf("/v1/schedules/pg-%02d", i), tn.Admin, map[string]any{"cron": "@hourly",
			"run": map[string]any{"subject": "pg-s", "kind": "k", "projectId": "pg", "agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
	}
	timeline := apiCount(t, tn, "/v1/attempts/"+cl.Attempt.AttemptID.String()+"/timeline?limit=500", nil)

	lists := []struct {
		start, rows string
		// filter is a form field that must keep its value on every page, and that value.
		filter, value string
		want          int
	}{
		{"/ui/runs?project=pg&state=queued", "#runs tbody tr", "#f-project", "pg", apiCount(t, tn, "/v1/runs?projectId=pg&state=queued&limit=500", nil)},
		{"/ui/decisions?project=pg&status=pending", "#decisions tbody tr", "#f-project", "pg",
			apiCount(t, tn, "/v1/decisions?projectId=pg&status=pending&limit=500", nil)},
		{"/ui/projects", "#projects tbody tr", "", "", apiCount(t, tn, "/v1/projects?limit=500", nil)},
		{"/ui/schedules", "#schedules tbody tr", "", "", apiCount(t, tn, "/v1/schedules?limit=500", nil)},
		{"/ui/releases?state=verified", "#releases tbody tr", "#f-rstate", "verified", apiCount(t, tn, "/v1/releases?state=verified&limit=500", nil)},
		{"/ui/attempts/" + cl.Attempt.AttemptID.String(), "#timeline tbody tr", "", "", timeline},
	}
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	for _, l := range lists {
		if l.want <= 50 {
			t.Fatalf("%s: the API lists %d rows, too few to page", l.start, l.want)
		}
		do(t, ctx, chromedp.Navigate(s.URL+l.start), chromedp.WaitVisible(chromedp.CSS("main")))
		seen := map[string]bool{}
		pages := 0
		for {
			pages++
			rows := eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(r => r.outerHTML)`, l.rows))
			for _, r := range rows {
				if seen[r] {
					t.Fatalf("%s: page %d shows a row again (at %s)", l.start, pages, location(t, ctx))
				}
				seen[r] = true
			}
			if l.filter != "" {
				if v := eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).value`, l.filter)); v != l.value {
					t.Fatalf("%s: page %d lost its filter: %s is %q (at %s)", l.start, pages, l.filter, v, location(t, ctx))
				}
			}
			if !eval[bool](t, ctx, `!!document.querySelector("a[rel=next]")`) {
				break
			}
			if pages > 20 {
				t.Fatalf("%s: more than 20 pages", l.start)
			}
			clickNav(t, ctx, "a[rel=next]", "main")
		}
		if len(seen) != l.want || pages < 2 {
			t.Errorf("%s: the console showed %d rows on %d pages, the API lists %d", l.start, len(seen), pages, l.want)
		}
	}
}

// nested is a JSON value of depth arrays, one inside the other.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// TestStoredJSONBoundedOnEveryPage stores the worst values the API accepts (a run input and
// decision options and answer nested as deep as the body's depth cap allows, a run input of most of a megabyte
// of characters HTML escapes, a choice of a thousand long options) and renders every page
// that shows stored JSON, and the listings around them: each page stays within a fixed byte
// budget, shows the value compact and cut, and links to the API for the whole of it.
func TestStoredJSONBoundedOnEveryPage(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	const depth = strictjson.MaxDepth - 1 // the body's object is the first level
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	var deepRun, wideRun api.Run
	spec := func(subject string, input json.RawMessage) map[string]any {
		return map[string]any{"subject": subject, "kind": "review", "projectId": "p1", "agentId": "a1",
			"stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "band": "interactive", "input": input}
	}
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, spec("deep", nested(depth))).Decode(t, &deepRun)
	wide, _ := json.Marshal(strings.Repeat(`<&"`, 60_000))
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, spec("wide", wide)).Decode(t, &wideRun)
	cl, ok, _ := tn.Claim(3600, nil)
	if !ok || cl.Run.RunID != deepRun.RunID {
		t.Fatal("claim did not lease the deep run")
	}
	var deepDec, manyDec decision
	tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"kind": "input", "options": nested(depth)}).Decode(t, &deepDec)
	var many []string
	for i := 0; i < 1000; i++ {
		many = append(many, fmt.Sprintf("%04d %s%s", i, strings.Repeat("<", 100), strings.Repeat("x", 280)))
	}
	manyOpts, _ := json.Marshal(many)
	tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"kind": "choice", "options": json.RawMessage(manyOpts)}).Decode(t, &manyDec)
	etag := tn.Must(http.StatusOK, "GET", "/v1/decisions/"+deepDec.DecisionID.String(), tn.Admin, nil).Header.Get("ETag")
	tn.Must(http.StatusOK, "POST", "/v1/decisions/"+deepDec.DecisionID.String()+"/answer", tn.Admin,
		map[string]any{"status": "approved", "answer": nested(depth)}, "If-Match", etag)

	c, _, _ := httpSession(t, s, tn.Admin)
	pages := []struct {
		path string
		// whole is the API path the page must link to for a value it cut ("": none).
		whole string
	}{
		{"/ui/runs/" + deepRun.RunID.String(), "/v1/runs/" + deepRun.RunID.String()},
		{"/ui/runs/" + wideRun.RunID.String(), "/v1/runs/" + wideRun.RunID.String()},
		{"/ui/decisions/" + deepDec.DecisionID.String(), "/v1/decisions/" + deepDec.DecisionID.String()},
		{"/ui/decisions/" + manyDec.DecisionID.String(), "/v1/decisions/" + manyDec.DecisionID.String()},
		{"/ui/attempts/" + cl.Attempt.AttemptID.String(), ""},
		{"/ui/runs", ""},
		{"/ui/decisions?status=all", ""},
		{"/ui/", ""},
	}
	for _, p := range pages {
		st, body := get(t, c, s, p.path)
		if st != http.StatusOK {
			t.Errorf("%s: %d", p.path, st)
			continue
		}
		if len(body) > budget {
			t.Errorf("%s: %d bytes, past the budget of %d", p.path, len(body), budget)
		}
		if p.whole != "" && !strings.Contains(body, `href="`+p.whole+`"`) {
			t.Errorf("%s does not link to %s for the whole value", p.path, p.whole)
		}
	}
}

// TestConsoleAnswerStrictDecoder: an answer the API refuses (a member given twice, nesting
// past the limit, at any depth past it) is refused by the console's form too, with the
// reason on the page, and nothing is stored; a plain word is still sent as a JSON string.
func TestConsoleAnswerStrictDecoder(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	_, d := askDecision(t, tn, "strict-1")
	c, csrf, _ := httpSession(t, s, tn.Admin)
	path := "/ui/decisions/" + d.DecisionID.String()
	answer := func(text string) (int, string) {
		_, page := get(t, c, s, path)
		etag := regexp.MustCompile(`name="etag" value="([^"]+)"`).FindStringSubmatch(page)
		if etag == nil {
			t.Fatal("no ETag on the decision page")
		}
		r, err := c.PostForm(s.URL+path+"/answer", url.Values{"csrf": {csrf}, "etag": {strings.ReplaceAll(etag[1], "&#34;", `"`)},
			"status": {"approved"}, "answer": {text}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, text, says string
		// console: only a form can carry it (an API body holding it is another, valid body).
		console bool
	}{
		{"duplicate member", `{"a":1,"a":2}`, "answer.a is given more than once", false},
		{"duplicate deep inside", `[{"x":[{"b":true,"b":false}]}]`, "is given more than once", false},
		{"nested 20,000 deep", string(nested(20000)), "nested more than", false},
		{"nested one past the API's limit", string(nested(10001)), "nested more than", false},
		{"two values", `{"a":1} {"b":2}`, "malformed JSON", false},
		{"a member after the answer", `{},"approvalId":"` + uuid.NewString() + `"`, "one JSON value", true},
	} {
		if !tc.console {
			// The API refuses it.
			etag := tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d.DecisionID.String(), tn.Admin, nil).Header.Get("ETag")
			req, _ := http.NewRequest("POST", s.URL+"/v1/decisions/"+d.DecisionID.String()+"/answer",
				strings.NewReader(`{"status":"approved","answer":`+tc.text+`}`))
			req.Header.Set("Authorization", "Bearer "+tn.Admin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("If-Match", etag)
			r, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s: the API answered %d, want 400", tc.name, r.StatusCode)
			}
		}
		st, page := answer(tc.text)
		msg := regexp.MustCompile(`(?s)id="message">(.*?)</p>`).FindStringSubmatch(page)
		if st != http.StatusBadRequest || msg == nil || !strings.Contains(msg[1], tc.says) {
			t.Errorf("%s: the console answered %d with %q, want 400 saying %q", tc.name, st, msg, tc.says)
		}
		var got decision
		tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d.DecisionID.String(), tn.Admin, nil).Decode(t, &got)
		if got.Status != "pending" {
			t.Fatalf("%s: the refused answer was stored: %+v", tc.name, got)
		}
	}
	if st, _ := answer("ship it"); st != http.StatusSeeOther {
		t.Fatalf("a plain answer: %d, want 303", st)
	}
	var got struct {
		Status string          `json:"status"`
		Answer json.RawMessage `json:"answer"`
	}
	tn.Must(http.StatusOK, "GET", "/v1/decisions/"+d.DecisionID.String(), tn.Admin, nil).Decode(t, &got)
	if got.Status != "approved" || string(got.Answer) != `"ship it"` {
		t.Fatalf("the plain answer was stored as %+v", got)
	}
}

// TestRunPageChildrenBounded: the run page lists at most 100 delegated children over all
// its attempts and says when there are more.
func TestRunPageChildrenBounded(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	run := tn.Enqueue("parent", "interactive")
	cl, ok, _ := tn.Claim(3600, nil)
	if !ok || cl.Run.RunID != run.RunID {
		t.Fatal("claim did not lease the run")
	}
	c, _, _ := httpSession(t, s, tn.Admin)
	children := func() (int, bool) {
		_, page := get(t, c, s, "/ui/runs/"+run.RunID.String())
		body, _, _ := strings.Cut(page[strings.Index(page, `id="children"`)+1:], "</table>")
		return strings.Count(body, "<tr>") - 1, strings.Contains(page, `id="children-trimmed"`)
	}
	for i := 0; i < 101; i++ {
		tn.Must(http.StatusCreated, "POST", cl.Path("/delegations"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
			"purpose": "look", "child": map[string]any{"subject": fmt.Sprintf("child-%d", i), "kind": "review",
				"projectId": "p1", "agentId": "sub", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}})
		if i == 99 {
			if n, more := children(); n != 100 || more {
				t.Fatalf("with 100 children the page lists %d (more: %v)", n, more)
			}
		}
	}
	if n, more := children(); n != 100 || !more {
		t.Fatalf("with 101 children the page lists %d (more: %v), want 100 and a note", n, more)
	}
}

// A parked run's page says what it waits for, with links: its decision (pending since it
// was asked) and its child.
func TestRunPageSaysWhatAParkedRunWaitsFor(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	run := tn.Enqueue("parked", "interactive")
	cl, ok, _ := tn.Claim(3600, nil)
	if !ok || cl.Run.RunID != run.RunID {
		t.Fatal("claim did not lease the run")
	}
	var d struct {
		DecisionID  string `json:"decisionId"`
		RequestedAt string `json:"requestedAt"`
	}
	apitest.Decode(t, tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime,
		map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": "approval"}), &d)
	var del struct {
		ChildRunID string `json:"childRunId"`
	}
	apitest.Decode(t, tn.Must(http.StatusCreated, "POST", cl.Path("/delegations"), tn.Runtime, map[string]any{
		"fencingToken": cl.Lease.FencingToken, "purpose": "look", "child": map[string]any{"subject": "child", "kind": "review",
			"projectId": "p1", "agentId": "sub", "stepId": uuid.NewString(), "snapshotId": uuid.NewString()}}), &del)
	c, _, _ := httpSession(t, s, tn.Admin)
	if _, page := get(t, c, s, "/ui/runs/"+run.RunID.String()); strings.Contains(page, `id="waiting"`) {
		t.Fatal("a leased run's page says it is waiting")
	}
	tn.Must(http.StatusOK, "POST", cl.Path("/park"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"decisionIds": []string{d.DecisionID}, "childRunIds": []string{del.ChildRunID}})
	_, page := get(t, c, s, "/ui/runs/"+run.RunID.String())
	for _, want := range []string{`id="waiting"`, `decision <a href="/ui/decisions/` + d.DecisionID + `">`,
		"pending since " + strings.Replace(strings.TrimSuffix(d.RequestedAt, "Z"), "T", " ", 1),
		`child run <a href="/ui/runs/` + del.ChildRunID + `">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the parked run's page lacks %q", want)
		}
	}
	if _, page := get(t, c, s, "/ui/attempts/"+cl.Attempt.AttemptID.String()); !strings.Contains(page, "parked: the holder parked the run") {
		t.Error("the parked attempt's timeline does not end saying it parked")
	}
}
