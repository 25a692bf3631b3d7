package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// stack is the whole service over the env's database (and so its clock), serving what the
// env's store-level writes made.
type stack struct {
	*env
	srv            *apitest.Stack
	admin, runtime string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	e := newEnv(t, dbtest.SQLite())
	st := &stack{env: e, srv: apitest.New(t, apitest.Config{DB: e.db, Serve: true})}
	st.admin = st.key(e.tenant, tenancy.RoleAdmin)
	st.runtime = st.key(e.tenant, tenancy.RoleRuntime)
	return st
}

func (s *stack) key(tenant, role string) string {
	s.t.Helper()
	k, _, err := tenancy.NewStore(s.db).CreateKey(context.Background(), tenant, role)
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) get(key, path string) resp {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := s.srv.HTTP.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

type page struct {
	Items      []map[string]any `json:"items"`
	NextCursor string           `json:"nextCursor"`
}

func decodePage(t *testing.T, r resp) page {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	var p page
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decode page: %v: %s", err, r.body)
	}
	if p.Items == nil {
		t.Fatalf("items must be an array, never null: %s", r.body)
	}
	return p
}

func wantInvalid(t *testing.T, r resp, field string) {
	t.Helper()
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", r.status, r.body)
	}
	var p struct {
		Code   string `json:"code"`
		Errors []struct {
			Field string `json:"field"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Code != "invalid_request" {
		t.Fatalf("not an invalid_request problem: %s", r.body)
	}
	for _, e := range p.Errors {
		if e.Field == field {
			return
		}
	}
	t.Fatalf("problem does not name field %q: %s", field, r.body)
}

func TestHTTPListAndFilters(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a1 := s.attempt()
	s.clock.Advance(time.Second)
	a2 := s.attempt(agent("agent-2"))
	s.clock.Advance(time.Second)
	a3 := s.attempt(project("p2"))

	for _, key := range []string{s.admin, s.runtime} {
		p := decodePage(t, s.get(key, "/v1/attempts"))
		if len(p.Items) != 3 || p.Items[0]["attemptId"] != a3.Attempt.AttemptID.String() ||
			p.Items[2]["attemptId"] != a1.Attempt.AttemptID.String() || p.NextCursor != "" {
			t.Fatalf("list: %+v", p)
		}
		first := p.Items[0]
		if first["state"] != "running" || first["phase"] != "starting" || first["projectId"] != "p2" ||
			first["etag"] != a3.Attempt.Version.ETag() || first["startedAt"] != "2026-03-01T09:00:02.000Z" {
			t.Fatalf("item fields: %v", first)
		}
		if _, leaked := first["tenantId"]; leaked {
			t.Fatalf("item carries its tenant: %v", first)
		}
	}
	q := url.Values{"agentId": {"agent-2"}}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?"+q.Encode())); len(p.Items) != 1 || p.Items[0]["attemptId"] != a2.Attempt.AttemptID.String() {
		t.Fatalf("agent filter: %+v", p)
	}
	q = url.Values{"runId": {a1.Run.RunID.String()}, "state": {"running"}}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?"+q.Encode())); len(p.Items) != 1 || p.Items[0]["attemptId"] != a1.Attempt.AttemptID.String() {
		t.Fatalf("run filter: %+v", p)
	}
	q = url.Values{"startedFrom": {"2026-03-01T10:00:01+01:00"}, "startedTo": {"2026-03-01T09:00:02Z"}}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?"+q.Encode())); len(p.Items) != 1 || p.Items[0]["attemptId"] != a2.Attempt.AttemptID.String() {
		t.Fatalf("time filter (offset times): %+v", p)
	}

	// Pages: limit 1 walks newest first through opaque, URL-safe cursors.
	var walked []any
	path := "/v1/attempts?limit=1"
	for range 5 {
		p := decodePage(t, s.get(s.admin, path))
		for _, it := range p.Items {
			walked = append(walked, it["attemptId"])
		}
		if p.NextCursor == "" {
			break
		}
		if url.QueryEscape(p.NextCursor) != p.NextCursor {
			t.Fatalf("cursor %q is not URL-safe", p.NextCursor)
		}
		path = "/v1/attempts?limit=1&cursor=" + p.NextCursor
	}
	want := []any{a3.Attempt.AttemptID.String(), a2.Attempt.AttemptID.String(), a1.Attempt.AttemptID.String()}
	if len(walked) != 3 || walked[0] != want[0] || walked[1] != want[1] || walked[2] != want[2] {
		t.Fatalf("walk %v, want %v", walked, want)
	}
}

func TestHTTPBadQueries(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, c := range []struct{ query, field string }{
		{"state=finished", "state"},
		{"state=RUNNING", "state"},
		{"runId=nope", "runId"},
		{"startedFrom=yesterday", "startedFrom"},
		{"startedFrom=2026-03-02T00:00:00Z&startedTo=2026-03-01T00:00:00Z", "startedTo"},
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"cursor=%21%21", "cursor"},
		{"cursor=e30", "cursor"}, // "{}": neither keyset
		{"changedSince=nope", "changedSince"},
		{"changedSince=W%2F%220000000000000001%22", "changedSince"},
		{"changedSince=0000000000000001&agentId=a", "agentId"},
		{"changedSince=0000000000000001&state=running", "state"},
		{"changedSince=0000000000000001&runId=" + s.attempt().Run.RunID.String(), "runId"},
		{"changedSince=0000000000000001&startedFrom=2026-03-01T00:00:00Z", "startedFrom"},
	} {
		wantInvalid(t, s.get(s.admin, "/v1/attempts?"+c.query), c.field)
	}
	// A listing's cursor cannot continue a change feed.
	s.attempt()
	p := decodePage(t, s.get(s.admin, "/v1/attempts?limit=1"))
	wantInvalid(t, s.get(s.admin, "/v1/attempts?changedSince=0000000000000000&cursor="+p.NextCursor), "cursor")
	if r := s.get("", "/v1/attempts"); r.status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.status)
	}
}

func TestHTTPChangedSince(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a1, a2 := s.attempt(), s.attempt()
	mark := a2.Attempt.Version.ETag()
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?changedSince="+url.QueryEscape(mark))); len(p.Items) != 0 || p.NextCursor != "" {
		t.Fatalf("nothing changed since the newest ETag: %+v", p)
	}
	if _, err := s.svc.PatchAttempt(s.ctx, s.tenant, a1.Attempt.AttemptID, a1.Lease.FencingToken,
		runs.AttemptPatch{Phase: ptr(api.PhasePlanning)}); err != nil {
		t.Fatal(err)
	}
	a3 := s.attempt()
	// Quoted or bare, the ETag names the same version; the feed pages in version order.
	bare := strings.Trim(mark, `"`)
	p := decodePage(t, s.get(s.admin, "/v1/attempts?limit=1&changedSince="+bare))
	if len(p.Items) != 1 || p.Items[0]["attemptId"] != a1.Attempt.AttemptID.String() || p.Items[0]["phase"] != "planning" || p.NextCursor == "" {
		t.Fatalf("first change: %+v", p)
	}
	// The cursor alone continues the feed.
	p = decodePage(t, s.get(s.admin, "/v1/attempts?limit=1&cursor="+p.NextCursor))
	if len(p.Items) != 1 || p.Items[0]["attemptId"] != a3.Attempt.AttemptID.String() {
		t.Fatalf("second change: %+v", p)
	}
	last := p.Items[0]["etag"].(string)
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?changedSince="+url.QueryEscape(last))); len(p.Items) != 0 {
		t.Fatalf("resume from the last etag: %+v", p)
	}
	// Another tenant's feed is empty.
	other := s.newTenant()
	if p := decodePage(t, s.get(s.key(other, tenancy.RoleAdmin), "/v1/attempts?changedSince=0000000000000000")); len(p.Items) != 0 {
		t.Fatalf("other tenant's feed: %+v", p)
	}
}

func TestHTTPGetAndTimeline(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a := s.attempt()
	r := s.get(s.runtime, "/v1/attempts/"+a.Attempt.AttemptID.String())
	if r.status != http.StatusOK || r.header.Get("ETag") != a.Attempt.Version.ETag() {
		t.Fatalf("get: %d %q %s", r.status, r.header.Get("ETag"), r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil || got["attemptId"] != a.Attempt.AttemptID.String() || got["fencingToken"] != float64(1) {
		t.Fatalf("get body: %s", r.body)
	}
	other := s.key(s.newTenant(), tenancy.RoleAdmin)
	for _, path := range []string{"/v1/attempts/" + a.Attempt.AttemptID.String(), "/v1/attempts/" + a.Attempt.AttemptID.String() + "/timeline"} {
		if r := s.get(other, path); r.status != http.StatusNotFound || !strings.Contains(string(r.body), `"not_found"`) {
			t.Fatalf("other tenant %s: %d %s", path, r.status, r.body)
		}
	}
	if r := s.get(s.admin, "/v1/attempts/not-a-uuid"); r.status != http.StatusBadRequest {
		t.Fatalf("malformed id: %d", r.status)
	}

	t0 := epoch.Add(time.Minute)
	cp := s.checkpoint(a, 7, t0)
	call := s.call(a, 1, t0)
	dec := s.decision(a, t0.Add(time.Second))
	del := s.delegation(a, t0.Add(2*time.Second))
	p := decodePage(t, s.get(s.admin, "/v1/attempts/"+a.Attempt.AttemptID.String()+"/timeline?limit=2"))
	if len(p.Items) != 2 || p.NextCursor == "" {
		t.Fatalf("first timeline page: %+v", p)
	}
	e0 := p.Items[0]
	item := e0["item"].(map[string]any)
	if e0["kind"] != "checkpoint" || e0["id"] != cp.String() || e0["sequence"] != float64(7) || e0["at"] != "2026-03-01T09:01:00.000Z" ||
		item["checkpointId"] != cp.String() || item["phase"] != "acting" || item["adapterVersion"] != "1.0" || item["hash"] != "hash-7" {
		t.Fatalf("checkpoint entry: %v", e0)
	}
	e1 := p.Items[1]
	if item := e1["item"].(map[string]any); e1["kind"] != "call" || e1["id"] != call.String() || item["kind"] != "tool" || item["status"] != "succeeded" {
		t.Fatalf("call entry: %v", e1)
	}
	p = decodePage(t, s.get(s.admin, "/v1/attempts/"+a.Attempt.AttemptID.String()+"/timeline?limit=2&cursor="+p.NextCursor))
	if len(p.Items) != 2 || p.NextCursor != "" {
		t.Fatalf("second timeline page: %+v", p)
	}
	d := p.Items[0]
	if item := d["item"].(map[string]any); d["kind"] != "decision" || d["id"] != dec.String() || item["kind"] != "choice" ||
		item["options"].(map[string]any)["options"] == nil || item["answer"].(map[string]any)["pick"] != "a" {
		t.Fatalf("decision entry: %v", d)
	}
	if _, has := d["sequence"]; has {
		t.Fatalf("a decision has no sequence: %v", d)
	}
	if g := p.Items[1]; g["kind"] != "delegation" || g["id"] != del.String() || g["item"].(map[string]any)["purpose"] != "summarise" {
		t.Fatalf("delegation entry: %v", g)
	}
	wantInvalid(t, s.get(s.admin, "/v1/attempts/"+a.Attempt.AttemptID.String()+"/timeline?cursor=abc"), "cursor")
}

// TestHTTPListEnded: endedFrom/endedTo list the attempts ended in the window, newest end
// first, with the insights' filters, paged by cursors that continue only such a listing.
func TestHTTPListEnded(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a1, a2, a3 := s.attempt(), s.attempt(agent("agent-2")), s.attempt()
	for i, a := range []runs.Claimed{a1, a2} {
		s.clock.Advance(time.Second)
		if _, err := s.svc.Complete(s.ctx, s.tenant, a.Attempt.AttemptID, a.Lease.FencingToken,
			runs.Completion{State: api.AttemptFailed, Error: &attempts.Failure{Code: []string{"tool_timeout", "bad_input"}[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	// a3 is still running: never listed by its end
	window := "endedFrom=2026-03-01T09:00:00Z&endedTo=2026-03-01T10:00:00Z"
	p := decodePage(t, s.get(s.admin, "/v1/attempts?limit=1&"+window))
	if len(p.Items) != 1 || p.Items[0]["attemptId"] != a2.Attempt.AttemptID.String() || p.NextCursor == "" ||
		p.Items[0]["etag"] == nil || p.Items[0]["etag"] == "" {
		t.Fatalf("first page: %+v", p)
	}
	p = decodePage(t, s.get(s.admin, "/v1/attempts?limit=1&"+window+"&cursor="+p.NextCursor))
	if len(p.Items) != 1 || p.Items[0]["attemptId"] != a1.Attempt.AttemptID.String() || p.NextCursor != "" {
		t.Fatalf("second page: %+v", p)
	}
	for q, want := range map[string]string{"&errorCode=bad_input": a2.Attempt.AttemptID.String(),
		"&agentId=agent-2&state=failed": a2.Attempt.AttemptID.String(), "&kind=review&errorCode=tool_timeout": a1.Attempt.AttemptID.String(),
		"&releaseId=rel&errorCode=tool_timeout": a1.Attempt.AttemptID.String()} {
		if p := decodePage(t, s.get(s.admin, "/v1/attempts?"+window+q)); len(p.Items) != 1 || p.Items[0]["attemptId"] != want {
			t.Errorf("%s: %+v", q, p)
		}
	}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?endedFrom=2026-03-01T09:00:02Z")); len(p.Items) != 1 {
		t.Fatalf("endedFrom alone: %+v", p)
	}
	// The started listing takes the same release, kind and error filters.
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?errorCode=bad_input")); len(p.Items) != 1 || p.Items[0]["attemptId"] != a2.Attempt.AttemptID.String() {
		t.Fatalf("errorCode on the started listing: %+v", p)
	}
	// hasError=false names the attempts without an error (the errorCode insight's "(none)").
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?hasError=false")); len(p.Items) != 1 || p.Items[0]["attemptId"] != a3.Attempt.AttemptID.String() {
		t.Fatalf("hasError=false on the started listing: %+v", p)
	}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?hasError=false&"+window)); len(p.Items) != 0 {
		t.Fatalf("hasError=false on the ended listing: %+v", p)
	}
	if p := decodePage(t, s.get(s.admin, "/v1/attempts?hasError=true&"+window)); len(p.Items) != 2 {
		t.Fatalf("hasError=true on the ended listing: %+v", p)
	}
	// The not* lists leave out the attempts of the named groups (an insight's "other"); an
	// attempt without an error is kept, as the errorCode insight counts it in "(none)".
	a1ID, a2ID, a3ID := a1.Attempt.AttemptID.String(), a2.Attempt.AttemptID.String(), a3.Attempt.AttemptID.String()
	for q, want := range map[string][]string{
		window + "&notErrorCode=tool_timeout":                    {a2ID},
		window + "&notAgentId=agent-2":                           {a1ID},
		window + "&notAgentId=agent-2&notErrorCode=tool_timeout": nil,
		window + "&notKind=review":                               nil,
		window + "&notKind=deploy&notReleaseId=other":            {a2ID, a1ID},
		window + "&notReleaseId=rel":                             nil,
		window + "&notProjectId=nope&notErrorCode=bad_input":     {a1ID},
		"notErrorCode=tool_timeout&notErrorCode=bad_input":       {a3ID},
		"notErrorCode=tool_timeout&hasError=true":                {a2ID},
	} {
		var got []string
		for _, it := range decodePage(t, s.get(s.admin, "/v1/attempts?"+q)).Items {
			got = append(got, it["attemptId"].(string))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
	for _, c := range []struct{ query, field string }{
		{"notErrorCode=busy&notErrorCode=Not%20A%20Code", "notErrorCode[1]"},
		{"notAgentId=a%2Fb", "notAgentId[0]"},
		{"changedSince=0000000000000001&notKind=review", "notKind"},
		{window + "&runId=" + a1.Run.RunID.String(), "runId"},
		{window + "&startedFrom=2026-03-01T09:00:00Z", "startedFrom"},
		{"endedFrom=2026-03-02T00:00:00Z&endedTo=2026-03-01T00:00:00Z", "endedTo"},
		{"endedTo=yesterday", "endedTo"},
		{"errorCode=Not%20A%20Code", "errorCode"},
		{"hasError=maybe", "hasError"},
		{"hasError=false&errorCode=bad_input", "hasError"},
		{"changedSince=0000000000000001&hasError=true", "hasError"},
		{"changedSince=0000000000000001&endedFrom=2026-03-01T00:00:00Z", "endedFrom"},
	} {
		wantInvalid(t, s.get(s.admin, "/v1/attempts?"+c.query), c.field)
	}
	// A cursor of the ended listing continues only an ended listing, and the other way round.
	ended := decodePage(t, s.get(s.admin, "/v1/attempts?limit=1&"+window)).NextCursor
	started := decodePage(t, s.get(s.admin, "/v1/attempts?limit=1")).NextCursor
	wantInvalid(t, s.get(s.admin, "/v1/attempts?limit=1&cursor="+ended), "cursor")
	wantInvalid(t, s.get(s.admin, "/v1/attempts?limit=1&"+window+"&cursor="+started), "cursor")
	// Another tenant's window is empty.
	if p := decodePage(t, s.get(s.key(s.newTenant(), tenancy.RoleAdmin), "/v1/attempts?"+window)); len(p.Items) != 0 {
		t.Fatalf("other tenant: %+v", p)
	}
}
