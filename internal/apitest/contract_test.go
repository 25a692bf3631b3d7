package apitest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestContractCatchesBreaches proves the check every HTTP test runs would catch a server
// that drifts from its document: real answers pass, and each kind of breach, made by
// changing one thing in a real answer, fails with the validator's words.
func TestContractCatchesBreaches(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)})
	c, err := apitest.ContractOf(s.Server)
	if err != nil {
		t.Fatal(err)
	}
	_, _, runtime := s.TenantKeys(t)
	enq := `{"subject":"s1","kind":"k","projectId":"p1","agentId":"a","stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"}`
	created := s.Do(t, http.MethodPost, "/v1/runs", runtime, enq, nil)
	apitest.WantStatus(t, created, http.StatusCreated)
	var run map[string]any
	apitest.Decode(t, created, &run)
	runPath := "/v1/runs/" + run["runId"].(string)
	got := s.Do(t, http.MethodGet, runPath, runtime, "", nil)
	apitest.WantStatus(t, got, http.StatusOK)

	request := func(method, path, body string) *http.Request {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+runtime)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		return r
	}
	with := func(change func(m map[string]any)) []byte {
		m := map[string]any{}
		for k, v := range run {
			m[k] = v
		}
		change(m)
		b, _ := json.Marshal(m)
		return b
	}
	header := func(extra ...string) http.Header {
		h := got.Header.Clone()
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}
	problem := func(status int, code string) []byte {
		b, _ := json.Marshal(map[string]any{"type": "urn:ledger:problem:" + code, "title": http.StatusText(status),
			"status": status, "code": code, "detail": "d"})
		return b
	}
	problemHeader := header("Content-Type", "application/problem+json")
	problemHeader.Del("ETag")

	// The real exchanges keep the contract.
	if msg := c.Check(request(http.MethodGet, runPath, ""), nil, http.StatusOK, got.Header, got.Body); msg != "" {
		t.Fatalf("a real answer breaks the contract: %s", msg)
	}
	if msg := c.Check(request(http.MethodPost, "/v1/runs", enq), []byte(enq), http.StatusCreated, created.Header, created.Body); msg != "" {
		t.Fatalf("a real create breaks the contract: %s", msg)
	}

	for _, tc := range []struct {
		name       string
		method     string
		path, body string
		status     int
		header     http.Header
		resp       []byte
		want       string
	}{
		{"EnumAsInteger", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["band"] = 1 }), "band"},
		{"UnknownEnumValue", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["state"] = "paused" }), "state"},
		{"UndeclaredMember", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["tenantId"] = "t" }), "tenantId"},
		{"MissingRequiredMember", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { delete(m, "runId") }), "runId"},
		{"NullWhereNotNullable", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["subject"] = nil }), "subject"},
		{"TimeNotRFC3339", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["queuedAt"] = "2026-01-01 12:00:00" }), "queuedAt"},
		{"WrongType", http.MethodGet, runPath, "", http.StatusOK, got.Header, with(func(m map[string]any) { m["epoch"] = "1" }), "epoch"},
		{"UndeclaredStatus", http.MethodGet, runPath, "", http.StatusTeapot, got.Header, got.Body, "418"},
		{"UndeclaredHeader", http.MethodGet, runPath, "", http.StatusOK, header("X-Debug", "1"), got.Body, "X-Debug"},
		{"ETagWhereNoneIsDeclared", http.MethodGet, "/v1/runs", "", http.StatusOK, header(), []byte(`{"items":[]}`), "ETag"},
		{"MissingRequiredHeader", http.MethodPost, "/v1/runs", enq, http.StatusCreated, func() http.Header { h := created.Header.Clone(); h.Del("Location"); return h }(), created.Body, "Location"},
		{"UndeclaredProblemCode", http.MethodGet, runPath, "", http.StatusConflict, problemHeader, problem(http.StatusConflict, "stale_lease"), "409"},
		{"ProblemCodeOfAnotherStatus", http.MethodGet, runPath, "", http.StatusNotFound, problemHeader, problem(http.StatusNotFound, "stale_lease"), "code"},
		{"RefusedRequestAccepted", http.MethodPost, "/v1/runs", `{"subject":"s2"}`, http.StatusCreated, created.Header, created.Body, "refuses the request"},
		{"UnknownQueryParameterAccepted", http.MethodGet, "/v1/runs?projectid=p1", "", http.StatusOK, problemHeader, []byte(`{"items":[]}`), "projectid"},
		{"UnroutedAnsweredWithoutProblem", http.MethodGet, "/v1/nothing-here", "", http.StatusOK, got.Header, got.Body, "no documented operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := c.Check(request(tc.method, tc.path, tc.body), []byte(tc.body), tc.status, tc.header, tc.resp)
			if msg == "" || !strings.Contains(strings.ToLower(msg), strings.ToLower(tc.want)) {
				t.Fatalf("breach not caught (want a message naming %q): %q", tc.want, msg)
			}
		})
	}
}
