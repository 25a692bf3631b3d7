package decisions_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// wireDecision is a decision as a client decodes it.
type wireDecision struct {
	DecisionID     string  `json:"decisionId"`
	AttemptID      string  `json:"attemptId"`
	Kind           string  `json:"kind"`
	ApprovalID     *string `json:"approvalId"`
	ProposalHash   *string `json:"proposalHash"`
	Options        any     `json:"options"`
	Recommendation *string `json:"recommendation"`
	Status         string  `json:"status"`
	RequestedAt    string  `json:"requestedAt"`
	AnsweredAt     *string `json:"answeredAt"`
	Answer         any     `json:"answer"`
	AnsweredBy     *string `json:"answeredBy"`
	ExpiresAt      *string `json:"expiresAt"`
	TenantID       *string `json:"tenantId"`
	RunID          string  `json:"runId"`
	ProjectID      string  `json:"projectId"`
	Subject        string  `json:"subject"`
	AgentID        string  `json:"agentId"`
}

type wirePage struct {
	Items      []wireDecision `json:"items"`
	NextCursor string         `json:"nextCursor"`
}

var etagPattern = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

func TestHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t)

	t.Run("RequestAnswerAndReadBack", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:1")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		r := s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(
			`{"fencingToken":%d,"kind":"approval","proposalHash":"h1","options":{"a":1},"recommendation":"yes","expiresInSeconds":3600}`,
			cl.Lease.FencingToken), nil)
		apitest.Want(t, r, http.StatusCreated, "")
		d := apitest.DecodeAs[wireDecision](t, r)
		etag := r.Header.Get("ETag")
		if !etagPattern.MatchString(etag) || r.Header.Get("Location") != "/v1/decisions/"+d.DecisionID {
			t.Fatalf("ETag %q Location %q", etag, r.Header.Get("Location"))
		}
		if d.Status != "pending" || d.Kind != "approval" || d.AttemptID != cl.Attempt.AttemptID || fmt.Sprint(d.Options) != "map[a:1]" || d.ExpiresAt == nil || *d.ExpiresAt != "2026-01-01T13:00:00.000Z" ||
			d.RequestedAt != "2026-01-01T12:00:00.000Z" || d.TenantID != nil || d.Answer != nil {
			t.Fatalf("created decision %s", r.Body)
		}

		// Any role reads it, with the same ETag.
		for _, key := range []string{c.runtime, c.admin} {
			g := s.Do(t, http.MethodGet, "/v1/decisions/"+d.DecisionID, key, "", nil)
			apitest.Want(t, g, http.StatusOK, "")
			if g.Header.Get("ETag") != etag {
				t.Fatalf("GET ETag %q, want %q", g.Header.Get("ETag"), etag)
			}
		}
		// The admin inbox has it.
		inbox := s.Do(t, http.MethodGet, "/v1/decisions?status=pending", c.admin, "", nil)
		apitest.Want(t, inbox, http.StatusOK, "")
		if p := apitest.DecodeAs[wirePage](t, inbox); len(p.Items) != 1 || p.Items[0].DecisionID != d.DecisionID || p.NextCursor != "" {
			t.Fatalf("inbox %s", inbox.Body)
		}

		answer := "/v1/decisions/" + d.DecisionID + "/answer"
		approval := uuid.NewString()
		body := `{"status":"approved","answer":{"why":"fine"},"approvalId":"` + approval + `"}`
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.runtime, body, map[string]string{"If-Match": etag}), http.StatusForbidden, "forbidden")
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, body, nil), http.StatusPreconditionRequired, "precondition_required")
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, body, map[string]string{"If-Match": `W/` + etag}), http.StatusPreconditionFailed, "precondition_failed")
		v, _ := sqldb.ParseETag(etag)
		stale := (v + 1).ETag()
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, body, map[string]string{"If-Match": stale}), http.StatusPreconditionFailed, "precondition_failed")
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, `{"status":"maybe"}`, map[string]string{"If-Match": etag}), http.StatusBadRequest, "invalid_request")
		apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, `{"status":"approved","approvalId":"nope"}`, map[string]string{"If-Match": etag}), http.StatusBadRequest, "invalid_request")
		if g := s.Do(t, http.MethodGet, "/v1/decisions/"+d.DecisionID, c.admin, "", nil); g.Header.Get("ETag") != etag {
			t.Fatalf("a refused answer changed the decision: %s", g.Body)
		}

		s.Clock.Advance(2 * time.Second)
		a := s.Do(t, http.MethodPost, answer, c.admin, body, map[string]string{"If-Match": etag})
		apitest.Want(t, a, http.StatusOK, "")
		got := apitest.DecodeAs[wireDecision](t, a)
		if got.Status != "approved" || got.AnsweredBy == nil || *got.AnsweredBy != c.adminKeyID || got.ApprovalID == nil ||
			*got.ApprovalID != approval || got.AnsweredAt == nil || *got.AnsweredAt != "2026-01-01T12:00:02.000Z" ||
			fmt.Sprint(got.Answer) != "map[why:fine]" {
			t.Fatalf("answered %s", a.Body)
		}
		newTag := a.Header.Get("ETag")
		if !etagPattern.MatchString(newTag) || newTag == etag {
			t.Fatalf("answer ETag %q (was %q)", newTag, etag)
		}
		// The holder reads the answer.
		if h := s.Do(t, http.MethodGet, "/v1/decisions/"+d.DecisionID, c.runtime, "", nil); apitest.DecodeAs[wireDecision](t, h).Status != "approved" || h.Header.Get("ETag") != newTag {
			t.Fatalf("holder reads %s", h.Body)
		}
		for _, tag := range []string{newTag, etag} {
			apitest.Want(t, s.Do(t, http.MethodPost, answer, c.admin, `{"status":"rejected"}`, map[string]string{"If-Match": tag}), http.StatusConflict, "decision_closed")
		}

		list := s.Do(t, http.MethodGet, path, c.runtime, "", nil)
		apitest.Want(t, list, http.StatusOK, "")
		if p := apitest.DecodeAs[wirePage](t, list); len(p.Items) != 1 || p.Items[0].Status != "approved" {
			t.Fatalf("attempt's decisions %s", list.Body)
		}
	})

	t.Run("RequestProblems", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:2")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		tok := fmt.Sprint(cl.Lease.FencingToken)
		for _, body := range []string{
			``,
			`{}`,
			`[]`,
			`{"fencingToken":` + tok + `}`,
			`{"fencingToken":` + tok + `,"kind":"maybe"}`,
			`{"fencingToken":` + tok + `,"kind":"APPROVAL"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","extra":1}`,
			`{"fencingToken":"1","kind":"approval"}`,
			`{"fencingToken":0,"kind":"approval"}`,
			`{"kind":"approval"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","expiresInSeconds":0}`,
			`{"fencingToken":` + tok + `,"kind":"approval","expiresInSeconds":2592001}`,
			`{"fencingToken":` + tok + `,"kind":"approval","proposalHash":""}`,
			`{"fencingToken":` + tok + `,"kind":"approval","proposalHash":"` + strings.Repeat("h", 129) + `"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","proposalHash":"` + strings.Repeat("😀", 65) + `"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","recommendation":"` + strings.Repeat("r", 2001) + `"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","recommendation":"bell\u0007"}`,
			`{"fencingToken":` + tok + `,"kind":"approval","options":{"a":"` + "\xff" + `"}}`,
			`{"fencingToken":` + tok + `,"kind":"approval"} {}`,
			`{"fencingToken":` + tok + `,"kind":"approval"`,
		} {
			r := s.Do(t, http.MethodPost, path, c.runtime, body, nil)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("body %q: status %d, want 400; %s", body, r.Status, r.Body)
			}
			apitest.Want(t, r, http.StatusBadRequest, "invalid_request")
		}
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/not-a-uuid/decisions", c.runtime, `{"fencingToken":1,"kind":"input"}`, nil), http.StatusBadRequest, "invalid_request")
		if n := s.decisionCount(t, c.tenant); n != 0 {
			t.Fatalf("%d decisions written by bad requests", n)
		}
		ok := `{"fencingToken":` + tok + `,"kind":"input"}`
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.admin, ok, nil), http.StatusForbidden, "forbidden")
		apitest.Want(t, s.Do(t, http.MethodPost, path, "", ok, nil), http.StatusUnauthorized, "unauthorized")
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, `{"fencingToken":99,"kind":"input"}`, nil), http.StatusConflict, "stale_lease")
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/"+uuid.NewString()+"/decisions", c.runtime, ok, nil), http.StatusNotFound, "not_found")
		other := s.client(t)
		apitest.Want(t, s.Do(t, http.MethodPost, path, other.runtime, ok, nil), http.StatusNotFound, "not_found")
		if n := s.decisionCount(t, c.tenant) + s.decisionCount(t, other.tenant); n != 0 {
			t.Fatalf("%d decisions written by refused requests", n)
		}
		// A boundary value is fine: the longest recommendation, astral characters counted as
		// two UTF-16 units.
		long := `{"fencingToken":` + tok + `,"kind":"input","recommendation":"` + strings.Repeat("😀", 1000) + `"}`
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, long, nil), http.StatusCreated, "")
	})

	t.Run("AnswerIsCheckedAgainstTheDecision", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:checked")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		ask := func(body string) (wireDecision, string) {
			t.Helper()
			r := s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,%s}`, cl.Lease.FencingToken, body), nil)
			apitest.Want(t, r, http.StatusCreated, "")
			return apitest.DecodeAs[wireDecision](t, r), r.Header.Get("ETag")
		}
		r := s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,"kind":"choice","options":{"a":1}}`, cl.Lease.FencingToken), nil)
		apitest.WantFields(t, r, "options")
		choice, etag := ask(`"kind":"choice","options":["merge",{"id":"close","label":"Close it"}]`)
		answer := "/v1/decisions/" + choice.DecisionID + "/answer"
		apitest.WantFields(t, s.Do(t, http.MethodPost, answer, c.admin, `{"status":"approved","answer":"squash"}`,
			map[string]string{"If-Match": etag}), "answer")
		apitest.WantFields(t, s.Do(t, http.MethodPost, answer, c.admin, `{"status":"approved"}`,
			map[string]string{"If-Match": etag}), "answer")
		if g := s.Do(t, http.MethodGet, "/v1/decisions/"+choice.DecisionID, c.admin, "", nil); g.Header.Get("ETag") != etag ||
			apitest.DecodeAs[wireDecision](t, g).Status != "pending" {
			t.Fatalf("refused answers changed the decision: %s", g.Body)
		}
		ok := s.Do(t, http.MethodPost, answer, c.admin, `{"status":"approved","answer":"close"}`, map[string]string{"If-Match": etag})
		apitest.Want(t, ok, http.StatusOK, "")
		if d := apitest.DecodeAs[wireDecision](t, ok); d.Status != "approved" || d.Answer != "close" {
			t.Fatalf("answered %s", ok.Body)
		}
		input, etag := ask(`"kind":"input"`)
		apitest.WantFields(t, s.Do(t, http.MethodPost, "/v1/decisions/"+input.DecisionID+"/answer", c.admin, `{"status":"approved"}`,
			map[string]string{"If-Match": etag}), "answer")
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/decisions/"+input.DecisionID+"/answer", c.admin, `{"status":"rejected"}`,
			map[string]string{"If-Match": etag}), http.StatusOK, "")
	})

	t.Run("TheAttemptAwaitsItsDecisionAndResumesItsPhase", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:phase")
		attempt := "/v1/attempts/" + cl.Attempt.AttemptID
		phase := func() string {
			t.Helper()
			r := s.Do(t, http.MethodGet, attempt, c.admin, "", nil)
			apitest.Want(t, r, http.StatusOK, "")
			var a struct {
				Phase string `json:"phase"`
			}
			apitest.Decode(t, r, &a)
			return a.Phase
		}
		apitest.Want(t, s.Do(t, http.MethodPatch, attempt, c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"phase":"observing"}`, cl.Lease.FencingToken), nil), http.StatusOK, "")
		r := s.Do(t, http.MethodPost, attempt+"/decisions", c.runtime, fmt.Sprintf(`{"fencingToken":%d,"kind":"approval"}`, cl.Lease.FencingToken), nil)
		apitest.Want(t, r, http.StatusCreated, "")
		if p := phase(); p != "awaiting_decision" {
			t.Fatalf("phase after the request: %s", p)
		}
		d := apitest.DecodeAs[wireDecision](t, r)
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/decisions/"+d.DecisionID+"/answer", c.admin, `{"status":"approved"}`,
			map[string]string{"If-Match": r.Header.Get("ETag")}), http.StatusOK, "")
		if p := phase(); p != "observing" {
			t.Fatalf("phase after the answer: %s, want observing", p)
		}
	})

	t.Run("InboxItemsNameTheirSourceAndFilterByProject", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		apitest.Want(t, s.Do(t, http.MethodPut, "/v1/projects/p2", c.admin, `{}`, nil), http.StatusCreated, "")
		cl := s.claim(t, c, "review:source")
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/decisions", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"kind":"approval"}`, cl.Lease.FencingToken), nil)
		apitest.Want(t, r, http.StatusCreated, "")
		d := apitest.DecodeAs[wireDecision](t, r)
		if d.RunID != cl.Run.RunID || d.ProjectID != "p1" || d.Subject != "review:source" || d.AgentID != "a" {
			t.Fatalf("decision's source: %s", r.Body)
		}
		p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions?projectId=p1&status=pending", c.admin, "", nil))
		if len(p.Items) != 1 || p.Items[0].DecisionID != d.DecisionID || p.Items[0].Subject != "review:source" || p.Items[0].RunID != cl.Run.RunID {
			t.Fatalf("inbox of p1: %+v", p)
		}
		if p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions?projectId=p2", c.admin, "", nil)); len(p.Items) != 0 {
			t.Fatalf("inbox of p2: %+v", p)
		}
		apitest.WantFields(t, s.Do(t, http.MethodGet, "/v1/decisions?projectId="+strings.Repeat("p", 65), c.admin, "", nil), "projectId")
		other := s.client(t)
		if p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions?projectId=p1", other.admin, "", nil)); len(p.Items) != 0 {
			t.Fatalf("another tenant's inbox of p1: %+v", p)
		}
	})

	// The decisions insight's bars link to the inbox narrowed by kind, requested window and
	// the attempt's agent, release and run kind: each narrows to exactly its decisions.
	t.Run("InboxNarrowsAsTheDecisionsInsightCounts", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:insight")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		ask := func(body string) {
			t.Helper()
			apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,%s}`, cl.Lease.FencingToken, body), nil),
				http.StatusCreated, "")
		}
		ask(`"kind":"approval"`)
		ask(`"kind":"choice","options":[1]`)
		ask(`"kind":"choice","options":[2]`)
		s.Clock.Advance(10 * time.Second) // within the lease
		mid := s.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		ask(`"kind":"input"`)
		for q, want := range map[string]int{
			"": 4, "kind=approval": 1, "kind=choice": 2, "kind=input&status=pending": 1,
			"requestedFrom=" + mid: 1, "requestedTo=" + mid: 3, "requestedTo=" + mid + "&kind=choice": 2, "requestedFrom=" + mid + "&kind=choice": 0,
			"agentId=a": 4, "agentId=b": 0, "releaseId=" + c.release: 4, "releaseId=other": 0, "runKind=review": 4, "runKind=triage": 0,
		} {
			if p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions?"+q, c.admin, "", nil)); len(p.Items) != want {
				t.Errorf("%s: %d decisions, want %d", q, len(p.Items), want)
			}
		}
		for q, field := range map[string]string{"kind=vote": "kind", "requestedFrom=yesterday": "requestedFrom",
			"requestedFrom=2026-03-02T00:00:00Z&requestedTo=2026-03-01T00:00:00Z": "requestedTo", "runKind=%20x": "runKind"} {
			apitest.WantFields(t, s.Do(t, http.MethodGet, "/v1/decisions?"+q, c.admin, "", nil), field)
		}
	})

	t.Run("ReadsAndInbox", func(t *testing.T) {
		t.Parallel()
		c := s.client(t)
		cl := s.claim(t, c, "review:3")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		var created []string
		for i := 0; i < 3; i++ {
			r := s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,"kind":"choice","options":[%d]}`, cl.Lease.FencingToken, i), nil)
			apitest.Want(t, r, http.StatusCreated, "")
			created = append(created, apitest.DecodeAs[wireDecision](t, r).DecisionID)
		}
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions", c.runtime, "", nil), http.StatusForbidden, "forbidden")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions?status=open", c.admin, "", nil), http.StatusBadRequest, "invalid_request")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions?cursor=zzz", c.admin, "", nil), http.StatusBadRequest, "invalid_request")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions?limit=0", c.admin, "", nil), http.StatusBadRequest, "invalid_request")
		// Page through the inbox two at a time.
		var seen []string
		next := "/v1/decisions?limit=2"
		for next != "" {
			r := s.Do(t, http.MethodGet, next, c.admin, "", nil)
			apitest.Want(t, r, http.StatusOK, "")
			p := apitest.DecodeAs[wirePage](t, r)
			for _, d := range p.Items {
				seen = append(seen, d.DecisionID)
			}
			next = ""
			if p.NextCursor != "" {
				next = "/v1/decisions?limit=2&cursor=" + p.NextCursor
			}
		}
		if len(seen) != 3 {
			t.Fatalf("inbox paged %v, want the 3 decisions", seen)
		}
		for _, id := range created {
			found := false
			for _, s := range seen {
				found = found || s == id
			}
			if !found {
				t.Fatalf("decision %s missing from the inbox %v", id, seen)
			}
		}
		r := s.Do(t, http.MethodGet, path+"?limit=2", c.runtime, "", nil)
		apitest.Want(t, r, http.StatusOK, "")
		if p := apitest.DecodeAs[wirePage](t, r); len(p.Items) != 2 || p.NextCursor == "" {
			t.Fatalf("attempt's first page %s", r.Body)
		}

		other := s.client(t)
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions/"+created[0], other.admin, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, path, other.admin, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions/"+uuid.NewString(), c.admin, "", nil), http.StatusNotFound, "not_found")
		apitest.Want(t, s.Do(t, http.MethodGet, "/v1/decisions/xyz", c.admin, "", nil), http.StatusBadRequest, "invalid_request")
		etag := s.Do(t, http.MethodGet, "/v1/decisions/"+created[0], c.admin, "", nil).Header.Get("ETag")
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/decisions/"+created[0]+"/answer", other.admin, `{"status":"approved"}`,
			map[string]string{"If-Match": etag}), http.StatusNotFound, "not_found")
		if p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions", other.admin, "", nil)); len(p.Items) != 0 {
			t.Fatalf("other tenant's inbox holds %d decisions", len(p.Items))
		}
	})

}

// TestHTTPExpiryAndCompletion has a stack of its own: it moves the clock.
func TestHTTPExpiryAndCompletion(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	{
		c := s.client(t)
		cl := s.claim(t, c, "review:4")
		path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
		r := s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,"kind":"input","expiresInSeconds":5}`, cl.Lease.FencingToken), nil)
		apitest.Want(t, r, http.StatusCreated, "")
		exp := apitest.DecodeAs[wireDecision](t, r)
		r = s.Do(t, http.MethodPost, path, c.runtime, fmt.Sprintf(`{"fencingToken":%d,"kind":"input"}`, cl.Lease.FencingToken), nil)
		apitest.Want(t, r, http.StatusCreated, "")
		open := apitest.DecodeAs[wireDecision](t, r)
		s.Clock.Advance(5 * time.Second)
		g := s.Do(t, http.MethodGet, "/v1/decisions/"+exp.DecisionID, c.admin, "", nil)
		if apitest.DecodeAs[wireDecision](t, g).Status != "expired" {
			t.Fatalf("past expiry: %s", g.Body)
		}
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/decisions/"+exp.DecisionID+"/answer", c.admin, `{"status":"approved"}`,
			map[string]string{"If-Match": g.Header.Get("ETag")}), http.StatusConflict, "decision_closed")
		if p := apitest.DecodeAs[wirePage](t, s.Do(t, http.MethodGet, "/v1/decisions?status=expired", c.admin, "", nil)); len(p.Items) != 1 || p.Items[0].DecisionID != exp.DecisionID {
			t.Fatalf("expired inbox %+v", p)
		}
		apitest.Want(t, s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/complete", c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, cl.Lease.FencingToken), nil), http.StatusOK, "")
		if d := apitest.DecodeAs[wireDecision](t, s.Do(t, http.MethodGet, "/v1/decisions/"+open.DecisionID, c.runtime, "", nil)); d.Status != "cancelled" {
			t.Fatalf("pending decision after completion: %s", d.Status)
		}
	}
}

// TestOpenAPIDocumentsTheRoutes checks the routes' documentation: roles, If-Match and the
// problem codes each can answer, and the wire form of a decision.
func TestOpenAPIDocumentsTheRoutes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.Do(t, http.MethodGet, "/openapi.json", "", "", nil)
	apitest.Want(t, r, http.StatusOK, "")
	var doc struct {
		Paths map[string]map[string]struct {
			Roles      []string `json:"x-roles"`
			Parameters []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"parameters"`
			Responses map[string]struct {
				Codes []string `json:"x-problem-codes"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Enum       []string                  `json:"enum"`
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{
		"post /v1/attempts/{attemptId}/decisions": "runtime",
		"get /v1/attempts/{attemptId}/decisions":  "",
		"get /v1/decisions":                       "admin",
		"get /v1/decisions/{decisionId}":          "",
		"post /v1/decisions/{decisionId}/answer":  "admin",
	}
	for op, role := range roles {
		method, path, _ := strings.Cut(op, " ")
		o, ok := doc.Paths[path][method]
		if !ok {
			t.Fatalf("%s is not documented", op)
		}
		if got := strings.Join(o.Roles, ","); got != role {
			t.Fatalf("%s: roles %q, want %q", op, got, role)
		}
	}
	answer := doc.Paths["/v1/decisions/{decisionId}/answer"]["post"]
	ifMatch := false
	for _, p := range answer.Parameters {
		ifMatch = ifMatch || (p.Name == "If-Match" && p.Required)
	}
	if !ifMatch || !slices.Contains(answer.Responses["409"].Codes, "decision_closed") ||
		!slices.Contains(answer.Responses["428"].Codes, "precondition_required") ||
		!slices.Contains(answer.Responses["412"].Codes, "precondition_failed") {
		t.Fatalf("answer documents If-Match %v, responses %+v", ifMatch, answer.Responses)
	}
	create := doc.Paths["/v1/attempts/{attemptId}/decisions"]["post"]
	if !slices.Contains(create.Responses["409"].Codes, "stale_lease") || !slices.Contains(create.Responses["409"].Codes, "lease_expired") {
		t.Fatalf("create documents %+v", create.Responses)
	}
	props := doc.Components.Schemas["Decision"].Properties
	enumOf := func(prop string) string {
		ref, _ := props[prop]["$ref"].(string)
		return fmt.Sprint(doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")].Enum)
	}
	if props == nil || enumOf("kind") != "[approval choice input]" ||
		enumOf("status") != "[pending approved rejected expired cancelled]" || props["options"]["type"] != nil {
		t.Fatalf("decision schema %v", props)
	}
}
