package console_test

import (
	"io"
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

// TestRunCancelAndContinueFromTheConsole (issue 29 item 3): the run page offers cancel on a
// live run and continue on an ended one, each confirmed first (the asking GET changes
// nothing); the confirmation's POST needs the session's CSRF token and the same origin;
// continue takes a due time and honours attempts_exhausted.
func TestRunCancelAndContinueFromTheConsole(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, _ := httpSession(t, s, tn.Admin)
	run := tn.Enqueue("act-1", "batch")
	path := "/ui/runs/" + run.RunID.String()
	readRun := func() api.Run {
		var r api.Run
		tn.Must(http.StatusOK, "GET", "/v1/runs/"+run.RunID.String(), tn.Admin, nil).Decode(t, &r)
		return r
	}
	_, page := get(t, c, s, path)
	if !strings.Contains(page, `id="cancel-run"`) || strings.Contains(page, `id="continue-run"`) {
		t.Fatalf("a queued run's page offers cancel only")
	}
	_, page = get(t, c, s, path+"?confirm=cancel")
	if !strings.Contains(page, `id="confirm-cancel"`) || readRun().State != api.RunQueued {
		t.Fatalf("asking to confirm shows the form and changes nothing")
	}
	post := func(p string, form url.Values, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+p, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		return r.StatusCode, r.Header.Get("Location")
	}
	if st, _ := post(path+"/cancel", url.Values{}); st != http.StatusForbidden {
		t.Fatalf("cancel without the CSRF token: %d", st)
	}
	if st, _ := post(path+"/cancel", url.Values{"csrf": {csrf}}, "Origin", "https://evil.example"); st == http.StatusSeeOther {
		t.Fatalf("cancel from another origin: %d", st)
	}
	if r := readRun(); r.State != api.RunQueued {
		t.Fatalf("a refused cancel changed the run: %s", r.State)
	}
	if st, loc := post(path+"/cancel", url.Values{"csrf": {csrf}}); st != http.StatusSeeOther || loc != path+"?done=cancel" {
		t.Fatalf("cancel: %d %s", st, loc)
	}
	if r := readRun(); r.State != api.RunEnded || *r.Outcome != api.OutcomeCancelled || *r.ErrorCode != "cancelled" {
		t.Fatalf("cancelled run %+v", r)
	}
	_, page = get(t, c, s, path)
	if !strings.Contains(page, `id="continue-run"`) || strings.Contains(page, `id="cancel-run"`) {
		t.Fatalf("an ended run's page offers continue only")
	}
	// Continue with a due time: the new run's page.
	due := s.Clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, loc := post(path+"/continue", url.Values{"csrf": {csrf}, "dueAt": {due.Format("2006-01-02T15:04:05")}})
	if st != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs/") || loc == path+"?done=continue" {
		t.Fatalf("continue: %d %s", st, loc)
	}
	var next api.Run
	tn.Must(http.StatusOK, "GET", "/v1/runs/"+strings.TrimSuffix(strings.TrimPrefix(loc, "/ui/runs/"), "?done=continue"), tn.Admin, nil).Decode(t, &next)
	if next.ContinuedFromRunID == nil || *next.ContinuedFromRunID != run.RunID || !next.DueAt.Equal(due) {
		t.Fatalf("continuation %+v, want due %s", next, due)
	}
	// A run at its attempt limit is not continued: the page says why.
	last := tn.Enqueue("act-2", "batch")
	cl, ok, _ := tn.Claim(600, nil)
	if !ok || cl.Run.RunID != last.RunID {
		t.Fatal("claim found nothing")
	}
	for range 2 {
		tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "charge": true, "retryAfterSeconds": 0})
		if cl, ok, _ = tn.Claim(600, nil); !ok {
			t.Fatal("claim found nothing")
		}
	}
	tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "charge": true})
	lastPath := "/ui/runs/" + last.RunID.String()
	req, _ := http.NewRequest("POST", s.URL+lastPath+"/continue", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(b), "spent all its attempts") {
		t.Fatalf("continue of an exhausted run: %d, want 409 saying why", r.StatusCode)
	}
}

// TestRunForkFromTheConsole (issue 29 item 3): the run page offers a fork from each
// attempt's last checkpoint, confirmed first; the fork resumes from that checkpoint.
func TestRunForkFromTheConsole(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, _ := httpSession(t, s, tn.Admin)
	run := tn.Enqueue("fork-1", "batch")
	path := "/ui/runs/" + run.RunID.String()
	if _, page := get(t, c, s, path); strings.Contains(page, `id="fork-run"`) {
		t.Fatal("a run without a checkpoint offers a fork")
	}
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	var cp struct {
		CheckpointID string `json:"checkpointId"`
	}
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"sequence": 0, "phase": "acting", "adapterStateRef": "s3://s/0", "adapterVersion": "1.0", "hash": "h0"}).Decode(t, &cp)
	_, confirm := get(t, c, s, path+"?confirm=fork")
	if !strings.Contains(confirm, `id="confirm-fork"`) || !strings.Contains(confirm, cp.CheckpointID) {
		t.Fatal("the fork's confirmation does not offer the attempt's checkpoint")
	}
	// The confirmation names its fork once: a double click or a resent form makes one fork.
	m := regexp.MustCompile(`name="forkKey" value="([^"]+)"`).FindStringSubmatch(confirm)
	if m == nil {
		t.Fatal("the fork's confirmation carries no key of its own")
	}
	forkKey := m[1]
	if _, again := get(t, c, s, path+"?confirm=fork"); strings.Contains(again, forkKey) {
		t.Fatal("two confirmations share one fork key")
	}
	post := func(form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+path+"/fork", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode, r.Header.Get("Location")
	}
	if st, _ := post(url.Values{"checkpointId": {cp.CheckpointID}}); st != http.StatusForbidden {
		t.Fatalf("fork without the CSRF token: %d", st)
	}
	if st, _ := post(url.Values{"csrf": {csrf}, "checkpointId": {"not-a-uuid"}}); st != http.StatusBadRequest {
		t.Fatalf("fork from a malformed checkpoint: %d", st)
	}
	if st, _ := post(url.Values{"csrf": {csrf}, "checkpointId": {cp.CheckpointID}, "forkKey": {"my-own-key"}}); st != http.StatusBadRequest {
		t.Fatalf("fork under a key the console did not make: %d", st)
	}
	st, loc := post(url.Values{"csrf": {csrf}, "checkpointId": {cp.CheckpointID}, "forkKey": {forkKey}})
	if st != http.StatusSeeOther || !strings.HasSuffix(loc, "?done=fork") {
		t.Fatalf("fork: %d %s", st, loc)
	}
	if st, again := post(url.Values{"csrf": {csrf}, "checkpointId": {cp.CheckpointID}, "forkKey": {forkKey}}); st != http.StatusSeeOther || again != loc {
		t.Fatalf("the same confirmation again: %d %s, want the first fork %s", st, again, loc)
	}
	var list struct{ Items []api.RunItem }
	tn.Must(http.StatusOK, "GET", "/v1/runs?subject=fork-1", tn.Admin, nil).Decode(t, &list)
	if len(list.Items) != 2 {
		t.Fatalf("%d runs of the subject after one fork confirmed twice, want 2", len(list.Items))
	}
	forkID := strings.TrimSuffix(strings.TrimPrefix(loc, "/ui/runs/"), "?done=fork")
	var last struct {
		CheckpointID string `json:"checkpointId"`
	}
	tn.Must(http.StatusOK, "GET", "/v1/runs/"+forkID+"/checkpoints/last", tn.Admin, nil).Decode(t, &last)
	if last.CheckpointID != cp.CheckpointID || forkID == run.RunID.String() {
		t.Fatalf("the fork %s resumes from %s, want %s", forkID, last.CheckpointID, cp.CheckpointID)
	}
}

// TestRunPageShowsTagsMetadataAndFork: what an enqueue labelled the run with (tags, each a
// link to the runs with it, and metadata) and the checkpoint a fork started from are on
// the run page, as the API answers them.
func TestRunPageShowsTagsMetadataAndFork(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, _, _ := httpSession(t, s, tn.Admin)
	var run api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": "labelled", "kind": "review", "projectId": "p1",
		"agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "tags": []string{"urgent", "team a"},
		"metadata": map[string]any{"pr": 42}}).Decode(t, &run)
	_, page := get(t, c, s, "/ui/runs/"+run.RunID.String())
	for _, want := range []string{`<a href="/ui/runs?tag=urgent">urgent</a>`, `<a href="/ui/runs?tag=team%20a">team a</a>`, `<pre id="metadata">{&#34;pr&#34;:42}</pre>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s", want)
		}
	}
	cl, ok, _ := tn.Claim(600, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	var cp struct {
		CheckpointID string `json:"checkpointId"`
	}
	tn.Must(http.StatusCreated, "POST", cl.Path("/checkpoints"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken,
		"sequence": 0, "phase": "acting", "adapterStateRef": "s3://s/0", "adapterVersion": "1.0", "hash": "h0"}).Decode(t, &cp)
	var fork api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs/"+run.RunID.String()+"/fork", tn.Admin, map[string]any{"checkpointId": cp.CheckpointID}).Decode(t, &fork)
	if _, page := get(t, c, s, "/ui/runs/"+fork.RunID.String()); !strings.Contains(page, `id="forked-from"`) || !strings.Contains(page, cp.CheckpointID) {
		t.Error("the fork's page does not say which checkpoint it was forked from")
	}
	if _, page := get(t, c, s, "/ui/runs/"+run.RunID.String()); strings.Contains(page, `id="forked-from"`) {
		t.Error("a run that is no fork says it was forked")
	}
}

// TestExhaustedRunOffersNoContinue: a run that spent its attempts cannot be continued
// (409 attempts_exhausted), so its page offers no Continue button nor its confirmation,
// while an ended run with attempts left does.
func TestExhaustedRunOffersNoContinue(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, _, _ := httpSession(t, s, tn.Admin)
	enqueue := func(subject string, maxAttempts int) api.Run {
		var r api.Run
		tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{"subject": subject, "kind": "review", "projectId": "p1",
			"agentId": "a1", "stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "maxAttempts": maxAttempts}).Decode(t, &r)
		cl, ok, _ := tn.Claim(600, nil)
		if !ok || cl.Run.RunID != r.RunID {
			t.Fatal("the claim did not lease the run")
		}
		tn.Must(http.StatusOK, "POST", cl.Path("/release"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "charge": true})
		return r
	}
	spent, left := enqueue("spent", 1), enqueue("left", 2)
	tn.Must(http.StatusOK, "POST", "/v1/runs/"+left.RunID.String()+"/cancel", tn.Admin, nil)
	tn.Must(http.StatusConflict, "POST", "/v1/runs/"+spent.RunID.String()+"/continue", tn.Admin, nil)
	path := "/ui/runs/" + spent.RunID.String()
	if _, page := get(t, c, s, path); strings.Contains(page, `id="continue-run"`) {
		t.Error("a run that spent its attempts offers Continue")
	}
	if _, page := get(t, c, s, path+"?confirm=continue"); strings.Contains(page, `id="confirm-continue"`) {
		t.Error("a run that spent its attempts asks to confirm a continue")
	}
	if _, page := get(t, c, s, "/ui/runs/"+left.RunID.String()); !strings.Contains(page, `id="continue-run"`) {
		t.Error("an ended run with an attempt left offers no Continue")
	}
}
