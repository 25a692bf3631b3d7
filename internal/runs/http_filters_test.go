package runs_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

type runPage struct {
	Items []struct {
		RunID        string         `json:"runId"`
		ETag         string         `json:"etag"`
		Outcome      string         `json:"outcome"`
		ErrorCode    string         `json:"errorCode"`
		ErrorMessage string         `json:"errorMessage"`
		Tags         []string       `json:"tags"`
		Metadata     map[string]any `json:"metadata"`
	} `json:"items"`
	NextCursor string `json:"nextCursor"`
}

func (e *httpEnv) runIDs(query string) []string {
	e.t.Helper()
	var page runPage
	if code, _ := e.do("GET", "/v1/runs?"+query, e.admin, ``, &page); code != 200 {
		var p problem
		e.do("GET", "/v1/runs?"+query, e.admin, ``, &p)
		e.t.Fatalf("list %s: %d %+v", query, code, p)
	}
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.RunID)
	}
	return ids
}

// claimAs leases the tenant's next run with releaseID (activated first) and answers the
// attempt id and the run id.
func (e *httpEnv) claimAs(releaseID string) (attempt, run string) {
	e.t.Helper()
	if !e.active[releaseID] {
		e.stack.ActivateRelease(e.t, e.runtime, releaseID, "1.0")
		e.active[releaseID] = true
	}
	var claimed struct {
		Run     map[string]any `json:"run"`
		Attempt map[string]any `json:"attempt"`
	}
	body := strings.Replace(claimBody, `"releaseId":"r1"`, fmt.Sprintf(`"releaseId":%q`, releaseID), 1)
	if code, _ := e.do("POST", "/v1/runs/claim", e.runtime, body, &claimed); code != 200 {
		e.t.Fatalf("claim with %s: %d", releaseID, code)
	}
	return claimed.Attempt["attemptId"].(string), claimed.Run["runId"].(string)
}

// TestHTTPWhyItFailedAndFilters (issue 29 items 1 and 2): complete and release take an
// error that the run shows; the list filters by outcome, error code, release, ended time
// and tag (hasError=false: the runs without an error), and every item carries its etag; tags and metadata are part of the idempotent
// request.
func TestHTTPWhyItFailedAndFilters(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	before := time.Now().UTC().Add(-time.Second)
	var run map[string]any
	body := enqueueBody("f:1", `,"idempotencyKey":"ev-f1","tags":["nightly","team-a"],"metadata":{"pr": 7}`)
	if code, _ := e.do("POST", "/v1/runs", e.runtime, body, &run); code != 201 || fmt.Sprint(run["tags"]) != "[nightly team-a]" ||
		fmt.Sprint(run["metadata"]) != "map[pr:7]" {
		t.Fatalf("enqueue with tags: %d %v", code, run)
	}
	if code, _ := e.do("POST", "/v1/runs", e.runtime, body, nil); code != 200 {
		t.Fatalf("exact repeat with tags: %d", code)
	}
	var p problem
	for name, other := range map[string]string{
		"tags":     strings.Replace(body, `"team-a"`, `"team-b"`, 1),
		"metadata": strings.Replace(body, `{"pr": 7}`, `{"pr": 8}`, 1),
	} {
		if code, _ := e.do("POST", "/v1/runs", e.runtime, other, &p); code != 409 || p.Code != "idempotency_key_reused" {
			t.Fatalf("key reused with other %s: %d %+v", name, code, p)
		}
	}
	for name, c := range map[string]struct{ extra, field string }{
		"TooManyTags": {`,"tags":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]`, "tags"},
		"BadTag":      {`,"tags":[" padded"]`, "tags[0]"},
		"BigMetadata": {`,"metadata":"` + strings.Repeat("m", 4100) + `"`, "metadata"},
	} {
		if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("bad", c.extra), &p); code != 400 || len(p.Errors) == 0 || p.Errors[0].Field != c.field {
			t.Fatalf("%s: %d %+v, want 400 naming %s", name, code, p, c.field)
		}
	}
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("f:2", ""), nil); code != 201 {
		t.Fatal(code)
	}
	failed, failedRun := e.claimAs("rel-a")
	if code, _ := e.do("POST", "/v1/attempts/"+failed+"/complete", e.runtime,
		`{"fencingToken":1,"state":"failed","error":{"code":"BadCode"}}`, &p); code != 400 || p.Errors[0].Field != "error.code" {
		t.Fatalf("bad error code: %d %+v", code, p)
	}
	var att map[string]any
	done := `{"fencingToken":1,"state":"failed","error":{"code":"tool_timeout","message":"search hung","details":{"stack":["x.go:1"]}}}`
	if code, _ := e.do("POST", "/v1/attempts/"+failed+"/complete", e.runtime, done, &att); code != 200 ||
		fmt.Sprint(att["error"]) != "map[code:tool_timeout details:map[stack:[x.go:1]] message:search hung]" {
		t.Fatalf("complete with error: %d %v", code, att)
	}
	if code, _ := e.do("POST", "/v1/attempts/"+failed+"/complete", e.runtime, done, nil); code != 200 {
		t.Fatalf("exact repeat of the complete: %d", code)
	}
	ok, okRun := e.claimAs("rel-b")
	if code, _ := e.do("POST", "/v1/attempts/"+ok+"/complete", e.runtime, `{"fencingToken":1,"state":"succeeded"}`, nil); code != 200 {
		t.Fatal(code)
	}
	after := time.Now().UTC().Add(time.Second)
	if failedRun != run["runId"] {
		t.Fatalf("the tagged run was not claimed first")
	}
	var page runPage
	if code, _ := e.do("GET", "/v1/runs", e.admin, ``, &page); code != 200 || len(page.Items) != 2 {
		t.Fatalf("list: %d %+v", code, page)
	}
	for _, it := range page.Items {
		var one map[string]any
		_, h := e.do("GET", "/v1/runs/"+it.RunID, e.admin, ``, &one)
		if it.ETag == "" || it.ETag != h.Get("ETag") {
			t.Fatalf("item etag %q, the run's ETag %q", it.ETag, h.Get("ETag"))
		}
		if it.RunID == failedRun && (it.ErrorCode != "tool_timeout" || it.ErrorMessage != "search hung") {
			t.Fatalf("failed run in the list: %+v", it)
		}
	}
	var queued map[string]any
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("f:3", ""), &queued); code != 201 {
		t.Fatal(code)
	}
	queuedRun := fmt.Sprint(queued["runId"])
	ts := func(t time.Time) string { return url.QueryEscape(t.Format("2006-01-02T15:04:05.000Z")) }
	for q, want := range map[string][]string{
		"attemptsMin=1":                        {okRun, failedRun},
		"attemptsMin=1&attemptsMax=1":          {okRun, failedRun},
		"attemptsMin=2":                        nil,
		"attemptsMax=0":                        {queuedRun},
		"firstReleaseId=rel-a":                 {failedRun},
		"firstReleaseId=rel-c":                 nil,
		"outcome=failed":                       {failedRun},
		"outcome=succeeded":                    {okRun},
		"errorCode=tool_timeout":               {failedRun},
		"errorCode=other":                      nil,
		"hasError=false":                       {queuedRun, okRun},
		"hasError=true":                        {failedRun},
		"hasError=true&errorCode=tool_timeout": {failedRun},
		"hasError=false&outcome=succeeded":     {okRun},
		"hasRelease=false":                     {queuedRun},
		"hasRelease=true":                      {okRun, failedRun},
		"hasRelease=true&releaseId=rel-a":      {failedRun},
		"hasRelease=false&state=ended":         nil,
		// The not* lists (an insight's "other" group): a run without the value is kept.
		"notReleaseId=rel-a":                                        {queuedRun, okRun},
		"notReleaseId=rel-a&notReleaseId=rel-b":                     {queuedRun},
		"notReleaseId=rel-b&notReleaseId=rel-a&hasRelease=true":     nil,
		"notFirstReleaseId=rel-b":                                   {queuedRun, failedRun},
		"notErrorCode=tool_timeout":                                 {queuedRun, okRun},
		"notErrorCode=tool_timeout&hasError=true":                   nil,
		"notErrorCode=busy&notErrorCode=tool_timeout&hasError=true": nil,
		"notErrorCode=busy":                                         {queuedRun, okRun, failedRun},
		"notAgentId=a2&notAgentId=a1":                               nil,
		"notAgentId=a2":                                             {queuedRun, okRun, failedRun},
		"notProjectId=p1&outcome=failed":                            nil,
		"notKind=deploy&outcome=failed":                             {failedRun},
		"notKind=review":                                            nil,
		"releaseId=rel-b":                                           {okRun},
		"releaseId=rel-c":                                           nil,
		"tag=nightly":                                               {failedRun},
		"tag=Nightly":                                               nil,
		"endedFrom=" + ts(before):                                   {okRun, failedRun},
		"endedFrom=" + ts(after):                                    nil,
		"endedTo=" + ts(before):                                     nil,
		"outcome=failed&tag=team-a":                                 {failedRun},
		"outcome=succeeded&tag=team-a":                              nil,
	} {
		if got := e.runIDs(q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, want %v", q, got, want)
		}
	}
	for q, field := range map[string]string{"errorCode=Bad": "errorCode", "outcome=lost": "outcome", "tag=%20x": "tag",
		"endedFrom=" + ts(after) + "&endedTo=" + ts(before): "endedTo", "attemptsMin=2&attemptsMax=1": "attemptsMax",
		"attemptsMin=-1": "attemptsMin", "hasError=no": "hasError", "hasError=false&errorCode=tool_timeout": "hasError",
		"hasRelease=yes": "hasRelease", "hasRelease=false&releaseId=rel-a": "hasRelease",
		"notErrorCode=busy&notErrorCode=Bad": "notErrorCode[1]", "notAgentId=a%2Fb": "notAgentId[0]",
		"notKind=" + strings.Repeat("k&notKind=", 64) + "k": "notKind"} {
		if code, _ := e.do("GET", "/v1/runs?"+q, e.admin, ``, &p); code != 400 || len(p.Errors) == 0 || p.Errors[0].Field != field {
			t.Fatalf("%s: %d %+v, want 400 naming %s", q, code, p, field)
		}
	}
	// A cursor is made by its exclusion list, every item of it (web.FilterKey): another list
	// refuses it, the same list continues it.
	cursor := func(q string) string {
		var page runPage
		if code, _ := e.do("GET", "/v1/runs?limit=1&"+q, e.admin, ``, &page); code != 200 || page.NextCursor == "" {
			t.Fatalf("%s: %d %+v", q, code, page)
		}
		return page.NextCursor
	}
	one, two := cursor("notErrorCode=busy"), cursor("notErrorCode=busy&notErrorCode=late")
	if one == two {
		t.Fatalf("two exclusion lists made one cursor %q", one)
	}
	for q, want := range map[string]int{"notErrorCode=busy&notErrorCode=late&cursor=" + one: 400,
		"notErrorCode=busy&cursor=" + two: 400, "notErrorCode=late&notErrorCode=busy&cursor=" + two: 400,
		"notErrorCode=busy&notErrorCode=late&cursor=" + two: 200} {
		if code, _ := e.do("GET", "/v1/runs?limit=1&"+q, e.admin, ``, &p); code != want {
			t.Errorf("%s: %d, want %d", q, code, want)
		}
	}
}
