package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// Do sends one API request with key, failing the test that made the tenant on a transport
// error; body, when not nil, is sent as JSON; header holds name, value pairs.
func (tn *Tenant) Do(method, path, key string, body any, header ...string) Response {
	tn.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			tn.t.Fatal(err)
		}
	}
	h := make(map[string]string, len(header)/2)
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return tn.s.DoBytes(tn.t, method, path, key, b, h)
}

// Must is Do that fails the test unless the status is want.
func (tn *Tenant) Must(want int, method, path, key string, body any, header ...string) Response {
	tn.t.Helper()
	r := tn.Do(method, path, key, body, header...)
	if r.Status != want {
		tn.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Enqueue queues a run of band on subject in p1.
func (tn *Tenant) Enqueue(subject, band string) api.Run {
	tn.t.Helper()
	var r api.Run
	tn.Must(http.StatusCreated, "POST", "/v1/runs", tn.Runtime, map[string]any{
		"subject": subject, "kind": "review", "projectId": "p1", "agentId": "agent-1",
		"stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "band": band,
	}).Decode(tn.t, &r)
	return r
}

// Claimed is a claim's answer.
type Claimed struct{ api.Claim }

// Claim claims under the tenant's release with a lease of leaseSeconds; ok false on a 204
// (nothing, or a budget hold: then held is true).
func (tn *Tenant) Claim(leaseSeconds int, extra map[string]any) (cl Claimed, ok, held bool) {
	tn.t.Helper()
	body := map[string]any{"holderId": "h1", "releaseId": tn.Release, "adapterVersion": "1.0",
		"modelProfileId": "m1", "leaseSeconds": leaseSeconds}
	for k, v := range extra {
		body[k] = v
	}
	r := tn.Do("POST", "/v1/runs/claim", tn.Runtime, body)
	switch r.Status {
	case http.StatusOK:
		r.Decode(tn.t, &cl)
		return cl, true, false
	case http.StatusNoContent:
		return Claimed{}, false, r.Header.Get("Retry-After") != ""
	}
	tn.t.Fatalf("claim: status %d: %s", r.Status, r.Body)
	return
}

// Path formats an attempt path.
func (c Claimed) Path(suffix string) string {
	return fmt.Sprintf("/v1/attempts/%s%s", c.Attempt.AttemptID, suffix)
}

// Decode reads the body as JSON into v.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	Decode(t, r, v)
}

// Problem reads a problem's code.
func (r Response) Problem(t testing.TB) string {
	t.Helper()
	var p api.Problem
	r.Decode(t, &p)
	return string(p.Code)
}
