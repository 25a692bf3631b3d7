package runs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// FuzzRunRequests sends arbitrary bodies to every write route of the run-lease core (and a
// project PUT) through the real HTTP stack: the answer is never a 5xx, and an answer that
// refuses the request writes nothing (the database-wide row version and the lock table are
// unchanged).
func FuzzRunRequests(f *testing.F) {
	for _, seed := range []string{
		enqueueBody("fuzz:1", ""),
		enqueueBody("fuzz:2", `,"band":"interactive","maxAttempts":2,"input":{"a":[1,2]},"dueAt":"2026-01-01T00:00:00Z"`),
		`{"fencingToken":1}`,
		`{"fencingToken":1,"state":"succeeded","outcomeHash":"h"}`,
		`{"fencingToken":1,"charge":true,"retryAfterSeconds":5}`,
		`{"fencingToken":1,"phase":"acting","correction":true}`,
		`{"holderId":"h","ttlSeconds":60}`,
		claimBody,
		`{"fencingToken":-1}`, `{"fencingToken":"1"}`, `{"subject":""}`, `[]`, `null`, ``, `{`, `{"a":1}`,
		`{"fencingToken":1,"state":"lost"}`, `{"holderId":"\u0000","ttlSeconds":0}`, `{"active":"yes"}`,
	} {
		f.Add([]byte(seed))
	}
	e := newHTTPEnv(f)
	var cl struct {
		Attempt struct {
			AttemptID string `json:"attemptId"`
		} `json:"attempt"`
	}
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("fuzz:held", ""), nil); code != 201 {
		f.Fatalf("setup enqueue: %d", code)
	}
	if code, _ := e.do("POST", "/v1/runs/claim", e.runtime, claimBody, &cl); code != 200 {
		f.Fatalf("setup claim: %d", code)
	}
	attempt := "/v1/attempts/" + cl.Attempt.AttemptID
	routes := []struct{ method, path string }{
		{"POST", "/v1/runs"},
		{"POST", "/v1/runs/claim"},
		{"POST", attempt + "/heartbeat"},
		{"PATCH", attempt},
		{"POST", attempt + "/cancellation"},
		{"POST", attempt + "/release"},
		{"POST", attempt + "/complete"},
		{"PUT", "/v1/locks/agents/fuzz-agent/tasks/fuzz-task"},
		{"POST", "/v1/runs/" + uuid.NewString() + "/continue"},
		{"PUT", "/v1/projects/fuzz-project"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t // iterations in one process run one at a time
		for _, r := range routes {
			if r.path == "/v1/runs/claim" && strings.Contains(string(body), "wait") {
				continue // a long poll would only slow the fuzzer down
			}
			key := e.runtime
			if strings.HasPrefix(r.path, "/v1/projects/") {
				key = e.admin
			}
			before := fingerprint(t, e)
			code, _ := e.do(r.method, r.path, key, string(body), nil)
			switch {
			case code >= 500:
				t.Fatalf("%s %s with %q: %d", r.method, r.path, body, code)
			case code >= 400 && code != 404 && code != 409 && code != 412 && code != 428 && code != 400 && code != 413 && code != 422:
				t.Fatalf("%s %s with %q: unexpected %d", r.method, r.path, body, code)
			case code >= 400:
				if after := fingerprint(t, e); after != before {
					t.Fatalf("%s %s with %q answered %d but wrote: %s -> %s", r.method, r.path, body, code, before, after)
				}
			}
		}
	})
}

// fingerprint summarises everything a write can change: every versioned row stamps the
// database-wide counter, and task locks are the one table without a version.
func fingerprint(t *testing.T, e *httpEnv) string {
	t.Helper()
	var v, locks int64
	var held string
	row := e.db.Raw().QueryRowContext(context.Background(),
		`SELECT (SELECT Value FROM RowVersionCounter), (SELECT COUNT(*) FROM TaskRunLocks),
		 (SELECT COALESCE(MAX(HolderId || HeldUntil), '') FROM TaskRunLocks)`)
	if err := row.Scan(&v, &locks, &held); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d/%d/%s", v, locks, held)
}
