package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestBulkActionFromTheRunsList (issue 29 item 3): the runs list ticks rows or takes "all
// matching this filter"; the first POST only counts (a dry run) and asks to confirm, the
// confirmation creates the operation, and its page shows the progress. Both POSTs need the
// session's CSRF token.
func TestBulkActionFromTheRunsList(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, _ := httpSession(t, s, tn.Admin)
	r1, r2 := tn.Enqueue("bulk-1", "batch"), tn.Enqueue("bulk-2", "batch")
	state := func(r api.Run) api.RunState {
		var got api.Run
		tn.Must(http.StatusOK, "GET", "/v1/runs/"+r.RunID.String(), tn.Admin, nil).Decode(t, &got)
		return got.State
	}
	_, page := get(t, c, s, "/ui/runs?state=queued")
	if !strings.Contains(page, `id="bulk"`) || !strings.Contains(page, `name="runId" value="`+r1.RunID.String()+`"`) ||
		!strings.Contains(page, `name="filter" value="state=queued"`) {
		t.Fatal("the runs list has no bulk form with row checkboxes and its filter")
	}
	post := func(form url.Values) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/ui/runs/bulk", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, r.Header.Get("Location"), string(b)
	}
	if st, _, _ := post(url.Values{"action": {"cancel"}, "runId": {r1.RunID.String()}, "confirmed": {"1"}}); st != http.StatusForbidden {
		t.Fatalf("without the CSRF token: %d", st)
	}
	st, _, body := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "runId": {r1.RunID.String()}})
	if st != http.StatusOK || !strings.Contains(body, `id="confirm-bulk"`) || !strings.Contains(body, "1 run matches") {
		t.Fatalf("review: %d %s", st, body)
	}
	if state(r1) != api.RunQueued {
		t.Fatal("the review acted")
	}
	st, _, body = post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {"state=queued"}})
	if st != http.StatusOK || !strings.Contains(body, "2 runs match this filter") {
		t.Fatalf("review of all matching: %d %s", st, body)
	}
	st, loc, _ := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {"state=queued"}, "confirmed": {"1"}})
	if st != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/operations/") {
		t.Fatalf("confirm: %d %s", st, loc)
	}
	if _, err := s.App.Operations.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if state(r1) != api.RunEnded || state(r2) != api.RunEnded {
		t.Fatal("the operation did not cancel the runs")
	}
	_, page = get(t, c, s, loc)
	if !strings.Contains(page, `<dd id="op-state">succeeded</dd>`) || !strings.Contains(page, `<dd id="op-matched">2</dd>`) {
		t.Fatalf("operation page: %s", page)
	}
	if st, _, body := post(url.Values{"csrf": {csrf}, "action": {"cancel"}}); st != http.StatusBadRequest || !strings.Contains(body, "Tick the runs") {
		t.Fatalf("nothing ticked: %d", st)
	}
	// hasError selects exactly as the list does: the cancelled runs carry "cancelled", a new
	// queued run no error; a filter that contradicts itself or is not a flag is refused.
	tn.Enqueue("bulk-3", "batch")
	for filter, want := range map[string]string{"hasError=false": "1 run matches this filter", "hasError=true": "2 runs match this filter",
		"hasError=true&errorCode=cancelled": "2 runs match this filter",
		// No run here was ever claimed: hasRelease=false is every run, true none.
		"hasRelease=false": "3 runs match this filter", "hasRelease=true": "0 runs match this filter",
		// The not* lists: the run without an error is kept by notErrorCode.
		"notErrorCode=cancelled": "1 run matches this filter", "notErrorCode=busy&notErrorCode=cancelled&hasError=true": "0 runs match this filter",
		"notErrorCode=busy": "3 runs match this filter"} {
		if st, _, body := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {filter}}); st != http.StatusOK ||
			!strings.Contains(body, want) {
			t.Errorf("review of %s: %d, want %q", filter, st, want)
		}
	}
	for _, filter := range []string{"hasError=false&errorCode=cancelled", "hasError=nope", "hasRelease=false&release=r1", "hasRelease=no",
		"notErrorCode=Bad", "notFirstRelease=r1"} {
		if st, _, _ := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {filter}}); st == http.StatusOK {
			t.Errorf("review of %s was not refused", filter)
		}
	}
	tn.Must(http.StatusBadRequest, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel", "dryRun": true,
		"filter": map[string]any{"hasError": false, "errorCode": "cancelled"}})
	var op api.Operation
	tn.Must(http.StatusOK, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel", "dryRun": true,
		"filter": map[string]any{"hasError": false}}).Decode(t, &op)
	if op.Matched != 1 {
		t.Errorf("the API's dry run with hasError=false matched %d, want 1", op.Matched)
	}
	tn.Must(http.StatusBadRequest, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel", "dryRun": true,
		"filter": map[string]any{"hasRelease": false, "releaseId": "r1"}})
	tn.Must(http.StatusOK, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel", "dryRun": true,
		"filter": map[string]any{"hasRelease": false}}).Decode(t, &op)
	if op.Matched != 3 {
		t.Errorf("the API's dry run with hasRelease=false matched %d, want 3", op.Matched)
	}
	tn.Must(http.StatusOK, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel", "dryRun": true,
		"filter": map[string]any{"notErrorCode": []string{"cancelled"}}}).Decode(t, &op)
	if op.Matched != 1 {
		t.Errorf("the API's dry run with notErrorCode=[cancelled] matched %d, want 1", op.Matched)
	}
}

// TestOperationPageFollowsProgress: the page of a running operation follows its progress
// by itself, and stops asking once the operation has finished.
func TestOperationPageFollowsProgress(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	r := tn.Enqueue("bulk-live", "batch")
	var op api.Operation
	tn.Must(http.StatusAccepted, "POST", "/v1/runs/bulk", tn.Admin, map[string]any{"action": "cancel",
		"runIds": []string{r.RunID.String()}}).Decode(t, &op)
	ctx := tab(t)
	signIn(t, ctx, s, tn.Admin)
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/operations/"+op.OperationID.String()), chromedp.WaitVisible(chromedp.CSS("#op-state")))
	if got := text(t, ctx, "#op-state"); got != "running" {
		t.Fatalf("a new operation's page says %q", got)
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
	if _, err := s.App.Operations.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, `document.querySelector("#op-state").textContent === "succeeded" && document.querySelector("#op-done").textContent.startsWith("1 ")`)
	if !eval[bool](t, ctx, `window.sameDocument === true && !document.querySelector("#operation [hx-trigger], [hx-trigger][hx-get*='/ui/operations/']")`) {
		t.Fatal("the page was reloaded, or still polls a finished operation")
	}
}

// TestBulkConfirmationIsOneOperation: a confirmation sent twice (a double click) is one
// operation; the same action reviewed and confirmed again later is a new one, over the
// runs that match then.
func TestBulkConfirmationIsOneOperation(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, _ := httpSession(t, s, tn.Admin)
	post := func(form url.Values) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/ui/runs/bulk", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, r.Header.Get("Location"), string(b)
	}
	key := regexp.MustCompile(`name="opKey" value="([^"]+)"`)
	review := func() url.Values {
		t.Helper()
		st, _, body := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {"state=queued"}})
		m := key.FindStringSubmatch(body)
		if st != http.StatusOK || m == nil {
			t.Fatalf("review: %d, key %v", st, m)
		}
		return url.Values{"csrf": {csrf}, "action": {"cancel"}, "all": {"1"}, "filter": {"state=queued"}, "confirmed": {"1"}, "opKey": {m[1]}}
	}
	tn.Enqueue("once-1", "batch")
	form := review()
	_, first, _ := post(form)
	if _, again, _ := post(form); again != first || !strings.HasPrefix(first, "/ui/operations/") {
		t.Fatalf("one confirmation sent twice: %s then %s", first, again)
	}
	if _, err := s.App.Operations.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	late := tn.Enqueue("once-2", "batch")
	_, second, _ := post(review())
	if second == first || !strings.HasPrefix(second, "/ui/operations/") {
		t.Fatalf("a second review and confirmation answered %s (the first was %s)", second, first)
	}
	if _, err := s.App.Operations.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got api.Run
	tn.Must(http.StatusOK, "GET", "/v1/runs/"+late.RunID.String(), tn.Admin, nil).Decode(t, &got)
	if got.State != api.RunEnded {
		t.Fatalf("the run queued since the first is %v", got.State)
	}
	if st, _, _ := post(url.Values{"csrf": {csrf}, "action": {"cancel"}, "runId": {late.RunID.String()}, "confirmed": {"1"}, "opKey": {"mine"}}); st != http.StatusBadRequest {
		t.Fatalf("a key the console did not make: %d", st)
	}
}
