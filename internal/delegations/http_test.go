package delegations_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
)

type wireDelegation struct {
	DelegationID string  `json:"delegationId"`
	AttemptID    string  `json:"attemptId"`
	ChildRunID   string  `json:"childRunId"`
	ChildAgentID string  `json:"childAgentId"`
	Purpose      string  `json:"purpose"`
	Depth        int     `json:"depth"`
	Status       string  `json:"status"`
	CreatedAt    string  `json:"createdAt"`
	TenantID     *string `json:"tenantId"`
}

type wirePage struct {
	Items      []wireDelegation `json:"items"`
	NextCursor string           `json:"nextCursor"`
}

var etagPattern = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

func delegationBody(token int64, child string) string {
	return fmt.Sprintf(`{"fencingToken":%d,"purpose":"check the tests","child":%s}`, token, child)
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t)

	t.Run("DelegateFollowAndRepeat", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		p := s.parent(t, c, "review:1")
		path := "/v1/attempts/" + p.Attempt.AttemptID + "/delegations"
		body := delegationBody(p.Lease.FencingToken, enqueueBody("review:1:tests", childAgent, `,"idempotencyKey":"k1","input":{"n":1}`))
		r := s.Do(t, http.MethodPost, path, c.runtime, body, nil)
		apitest.Want(t, r, http.StatusCreated, "")
		d := apitest.DecodeAs[wireDelegation](t, r)
		etag := r.Header.Get("ETag")
		if !etagPattern.MatchString(etag) || r.Header.Get("Location") != "/v1/delegations/"+d.DelegationID {
			t.Fatalf("ETag %q Location %q", etag, r.Header.Get("Location"))
		}
		if d.Status != "pending" || d.Depth != 1 || d.AttemptID != p.Attempt.AttemptID || d.ChildAgentID != childAgent ||
			d.Purpose != "check the tests" || d.CreatedAt != "2026-01-01T12:00:00.000Z" || d.TenantID != nil {
			t.Fatalf("delegation %s", r.Body)
		}
		run := s.Do(t, http.MethodGet, "/v1/runs/"+d.ChildRunID, c.admin, "", nil)
		apitest.Want(t, run, http.StatusOK, "")
		var child struct {
			ParentRunID string          `json:"parentRunId"`
			Depth       int             `json:"depth"`
			State       string          `json:"state"`
			Input       json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(run.Body, &child); err != nil || child.ParentRunID != p.Run.RunID || child.Depth != 1 ||
			child.State != "queued" || string(child.Input) != `{"n":1}` {
			t.Fatalf("child run %s", run.Body)
		}

		// The same idempotency key answers 200 with the same delegation.
		again := s.Do(t, http.MethodPost, path, c.runtime, body, nil)
		apitest.Want(t, again, http.StatusOK, "")
		if apitest.DecodeAs[wireDelegation](t, again).DelegationID != d.DelegationID || again.Header.Get("ETag") != etag {
			t.Fatalf("repeat %s", again.Body)
		}

		for _, key := range []string{c.runtime, c.admin} {
			g := s.Do(t, http.MethodGet, "/v1/delegations/"+d.DelegationID, key, "", nil)
			apitest.Want(t, g, http.StatusOK, "")
			if g.Header.Get("ETag") != etag {
				t.Fatalf("GET ETag %q, want %q", g.Header.Get("ETag"), etag)
			}
		}

		cl := s.claim(t, c, childAgent)
		g := s.Do(t, http.MethodGet, "/v1/delegations/"+d.DelegationID, c.runtime, "", nil)
		if apitest.DecodeAs[wireDelegation](t, g).Status != "running" || g.Header.Get("ETag") == etag {
			t.Fatalf("after the child's claim: %s (ETag %s)", g.Body, g.Header.Get("ETag"))
		}
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/complete", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, cl.Lease.FencingToken), nil), http.StatusOK, "")
		if d := apitest.DecodeAs[wireDelegation](t, s.Do(t, http.MethodGet, "/v1/delegations/"+d.DelegationID, c.runtime, "", nil)); d.Status != "succeeded" {
			t.Fatalf("after the child succeeded: %s", d.Status)
		}

		list := s.Do(t, http.MethodGet, path, c.admin, "", nil)
		apitest.Want(t, list, http.StatusOK, "")
		if pg := apitest.DecodeAs[wirePage](t, list); len(pg.Items) != 1 || pg.Items[0].DelegationID != d.DelegationID || pg.Items[0].Status != "succeeded" {
			t.Fatalf("attempt's delegations %s", list.Body)
		}
	})

	t.Run("CreateProblems", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		p := s.parent(t, c, "review:2")
		path := "/v1/attempts/" + p.Attempt.AttemptID + "/delegations"
		tok := p.Lease.FencingToken
		good := enqueueBody("review:2:child", childAgent, "")
		for _, tc := range []struct{ body, field string }{
			{``, ""},
			{`{}`, ""},
			{`{"fencingToken":1,"purpose":"p"}`, "child"},
			{`{"fencingToken":1,"purpose":"p","child":null}`, "child"},
			{`{"fencingToken":1,"childAgentId":"a","purpose":"p","child":` + good + `}`, "childAgentId"},
			{delegationBody(tok, enqueueBody("c", childAgent, `,"parentRunId":"`+p.Run.RunID+`"`)), "child.parentRunId"},
			{delegationBody(tok, `{"kind":"review","projectId":"p1","agentId":"a","stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"}`), "child.subject"},
			{delegationBody(tok, enqueueBody("c", childAgent, `,"band":"urgent"`)), "child.band"},
			{delegationBody(tok, enqueueBody("c", childAgent, `,"maxAttempts":0`)), "child.maxAttempts"},
			{delegationBody(tok, enqueueBody("c", childAgent, `,"stepId":"x"`)), ""},
			{delegationBody(tok, enqueueBody("c", strings.Repeat("a", 129), "")), "child.agentId"},
			{delegationBody(tok, enqueueBody("c", strings.Repeat("😀", 65), "")), "child.agentId"},
			{strings.Replace(delegationBody(tok, good), `"check the tests"`, `""`, 1), "purpose"},
			{strings.Replace(delegationBody(tok, good), `"check the tests"`, `"tab\tok but nul\u0000 is not"`, 1), "purpose"},
			{strings.Replace(delegationBody(tok, good), `"check the tests"`, `"`+strings.Repeat("p", 1025)+`"`, 1), "purpose"},
			{strings.Replace(delegationBody(tok, good), `"fencingToken":`, `"fencingToken":"`, 1), ""},
			{strings.Replace(delegationBody(tok, good), `{"fencingToken"`, `{"extra":1,"fencingToken"`, 1), "extra"},
			{delegationBody(tok, good) + `{}`, ""},
		} {
			r := s.Do(t, http.MethodPost, path, c.runtime, tc.body, nil)
			apitest.Want(t, r, http.StatusBadRequest, "invalid_request")
			if tc.field != "" {
				var prob struct {
					Errors []struct{ Field string } `json:"errors"`
				}
				_ = json.Unmarshal(r.Body, &prob)
				found := false
				for _, fe := range prob.Errors {
					found = found || fe.Field == tc.field
				}
				if !found {
					t.Fatalf("body %.80q: field errors %s, want %s", tc.body, r.Body, tc.field)
				}
			}
		}
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/nope/delegations", c.runtime, delegationBody(tok, good), nil), http.StatusBadRequest, "invalid_request")
		if n := s.Rows(t, "Runs", c.tenant) + s.Rows(t, "SubAgentDelegations", c.tenant); n != 1 {
			t.Fatalf("bad requests wrote rows: %d runs and delegations, want only the parent run", n)
		}

		ok := delegationBody(tok, good)
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.admin, ok, nil), http.StatusForbidden, "forbidden")
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, delegationBody(tok+1, good), nil), http.StatusConflict, "stale_lease")
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/"+uuid.NewString()+"/delegations", c.runtime, ok, nil), http.StatusNotFound, "not_found")
		other := s.client(t)
		apitest.Want(t, s.Do(t, http.MethodPost, path, other.runtime, ok, nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, delegationBody(tok, enqueueBody("review:2", childAgent, "")), nil),
			http.StatusUnprocessableEntity, "subject_conflict")
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime,
			delegationBody(tok, strings.Replace(good, `"projectId":"p1"`, `"projectId":"p9"`, 1)), nil), http.StatusUnprocessableEntity, "unknown_project")
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/runs", c.runtime, enqueueBody("solo", "x", `,"idempotencyKey":"taken"`), nil), http.StatusCreated, "")
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, delegationBody(tok, enqueueBody("c", childAgent, `,"idempotencyKey":"taken"`)), nil),
			http.StatusConflict, "idempotency_key_reused")
		if n := s.Rows(t, "SubAgentDelegations", c.tenant) + s.Rows(t, "SubAgentDelegations", other.tenant); n != 0 {
			t.Fatalf("refused creates wrote %d delegations", n)
		}
		if n := s.Rows(t, "Runs", c.tenant); n != 2 {
			t.Fatalf("%d runs, want the parent and the plain run", n)
		}
	})

	t.Run("Reads", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		p := s.parent(t, c, "review:3")
		path := "/v1/attempts/" + p.Attempt.AttemptID + "/delegations"
		var ids []string
		for i := 0; i < 3; i++ {
			r := s.Do(t, http.MethodPost, path, c.runtime, delegationBody(p.Lease.FencingToken, enqueueBody(fmt.Sprintf("c%d", i), childAgent, "")), nil)
			apitest.Want(t, r, http.StatusCreated, "")
			ids = append(ids, apitest.DecodeAs[wireDelegation](t, r).DelegationID)
		}
		var seen []string
		next := path + "?limit=2"
		for next != "" {
			r := s.Do(t, http.MethodGet, next, c.runtime, "", nil)
			apitest.Want(t, r, http.StatusOK, "")
			pg := apitest.DecodeAs[wirePage](t, r)
			for _, d := range pg.Items {
				seen = append(seen, d.DelegationID)
			}
			next = ""
			if pg.NextCursor != "" {
				next = path + "?limit=2&cursor=" + pg.NextCursor
			}
		}
		if len(seen) != 3 {
			t.Fatalf("paged %v, want %v", seen, ids)
		}
		for _, id := range ids {
			if !strings.Contains(strings.Join(seen, ","), id) {
				t.Fatalf("delegation %s missing from %v", id, seen)
			}
		}
		apitest.Want(t, s.Do(t, http.MethodGet, path+"?cursor=bad", c.runtime, "", nil), http.StatusBadRequest, "invalid_request")
		other := s.client(t)
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/delegations/"+ids[0], other.admin, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, path, other.runtime, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/delegations/"+uuid.NewString(), c.admin, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/delegations/1", c.admin, "", nil), http.StatusBadRequest, "invalid_request")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/delegations/"+ids[0], "", "", nil), http.StatusUnauthorized, "unauthorized")
	})
}

// TestOpenAPIDocumentsTheRoutes checks the routes' documentation: roles, both success
// statuses of a create, and the problem codes it can answer.
func TestOpenAPIDocumentsTheRoutes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.Do(t, http.MethodGet, "/openapi.json", "", "", nil)
	apitest.Want(t, r, http.StatusOK, "")
	var doc struct {
		Paths map[string]map[string]struct {
			Roles     []string `json:"x-roles"`
			Responses map[string]struct {
				Codes []string `json:"x-problem-codes"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	for op, role := range map[string]string{
		"post /v1/attempts/{attemptId}/delegations": "runtime",
		"get /v1/attempts/{attemptId}/delegations":  "",
		"get /v1/delegations/{delegationId}":        "",
	} {
		method, path, _ := strings.Cut(op, " ")
		o, ok := doc.Paths[path][method]
		if !ok {
			t.Fatalf("%s is not documented", op)
		}
		if got := strings.Join(o.Roles, ","); got != role {
			t.Fatalf("%s: roles %q, want %q", op, got, role)
		}
	}
	create := doc.Paths["/v1/attempts/{attemptId}/delegations"]["post"].Responses
	_, ok200 := create["200"]
	_, ok201 := create["201"]
	codes := strings.Join(append(append(create["409"].Codes, create["422"].Codes...), create["404"].Codes...), ",")
	for _, want := range []string{"stale_lease", "lease_expired", "sequence_conflict", "subject_conflict", "loop_depth", "unknown_project", "not_found"} {
		if !strings.Contains(codes, want) {
			t.Fatalf("create documents %s, missing %s", codes, want)
		}
	}
	if !ok200 || !ok201 {
		t.Fatalf("create documents 200 %v and 201 %v", ok200, ok201)
	}
}
