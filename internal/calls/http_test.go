package calls_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/apitest"
)

func recordBody(token int64, seq int, hash string) string {
	return fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"kind":"tool","target":"tool://search/%d","requestHash":%q}`,
		token, seq, seq, hash)
}

func finishBody(token int64, status, receipt string) string {
	if receipt == "" {
		return fmt.Sprintf(`{"fencingToken":%d,"status":%q}`, token, status)
	}
	return fmt.Sprintf(`{"fencingToken":%d,"status":%q,"receiptRef":%q}`, token, status, receipt)
}

type wireCall struct {
	CallID           string  `json:"callId"`
	AttemptID        string  `json:"attemptId"`
	Sequence         int     `json:"sequence"`
	Kind             string  `json:"kind"`
	Target           string  `json:"target"`
	RequestHash      string  `json:"requestHash"`
	PolicyDecisionID *string `json:"policyDecisionId"`
	ReceiptRef       *string `json:"receiptRef"`
	Status           string  `json:"status"`
	StartedAt        string  `json:"startedAt"`
	EndedAt          *string `json:"endedAt"`
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	for _, c := range httpCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStack(t, 0))
		})
	}
}

var httpCases = []struct {
	name string
	run  func(t *testing.T, s *stack)
}{
	{"OpenCallIsAbandonedWhenTheAttemptCompletes", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		r := s.Do(t, http.MethodPost, path, rt, recordBody(l.Token, 0, "r0"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		loc := r.Header.Get("Location")
		s.Clock.Advance(2e9)
		done := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/complete", rt,
			fmt.Sprintf(`{"fencingToken":%d,"state":"failed"}`, l.Token), nil)
		apitest.WantStatus(t, done, http.StatusOK)
		got := apitest.DecodeAs[wireCall](t, s.Do(t, http.MethodGet, loc, rt, "", nil))
		if got.Status != "abandoned" || got.EndedAt == nil || *got.EndedAt != wireTime(epoch.Add(2*time.Second)) {
			t.Fatalf("call after its attempt completed: %+v, want abandoned at 12:00:02", got)
		}
	}},
	{"RecordCreatesWithETagRepeatsAndConflicts", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		b := `{"fencingToken":1,"sequence":0,"kind":"model","target":"model://a","requestHash":"r0",` +
			`"policyDecisionId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e5f"}`
		r := s.Do(t, http.MethodPost, path, rt, b, nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		var c wireCall
		apitest.Decode(t, r, &c)
		if c.AttemptID != l.AttemptID || c.Kind != "model" || c.Status != "started" || c.RequestHash != "r0" ||
			c.PolicyDecisionID == nil || *c.PolicyDecisionID != "0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e5f" ||
			c.EndedAt != nil || c.ReceiptRef != nil || c.StartedAt != wireTime(epoch) {
			t.Fatalf("created %s", r.Body)
		}
		if loc := r.Header.Get("Location"); loc != path+"/"+c.CallID {
			t.Fatalf("Location %q", loc)
		}
		etag := r.Header.Get("ETag")
		if len(etag) != 18 || etag[0] != '"' {
			t.Fatalf("ETag %q, want a strong tag", etag)
		}
		got := s.Do(t, http.MethodGet, r.Header.Get("Location"), rt, "", nil)
		apitest.WantStatus(t, got, http.StatusOK)
		if string(got.Body) != string(r.Body) || got.Header.Get("ETag") != etag {
			t.Fatalf("GET Location answered %s %s, want %s %s", got.Body, got.Header.Get("ETag"), r.Body, etag)
		}
		again := s.Do(t, http.MethodPost, path, rt, b, nil)
		apitest.WantStatus(t, again, http.StatusOK)
		if string(again.Body) != string(r.Body) || again.Header.Get("ETag") != etag {
			t.Fatalf("repeat answered %s %s", again.Body, again.Header.Get("ETag"))
		}
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, strings.Replace(b, `"r0"`, `"r1"`, 1), nil),
			http.StatusConflict, "sequence_conflict")
	}},

	{"FinishHonoursIfMatchAndRefusesAnotherFinish", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/calls", rt, recordBody(l.Token, 0, "r"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		loc, etag := r.Header.Get("Location"), r.Header.Get("ETag")
		done := finishBody(l.Token, "succeeded", "receipt://1")
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, rt, done, map[string]string{"If-Match": `"0000000000000001"`}),
			http.StatusPreconditionFailed, "precondition_failed")
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, rt, done, map[string]string{"If-Match": `W/` + etag}),
			http.StatusPreconditionFailed, "precondition_failed")
		s.Clock.Advance(1500 * 1e6)
		fin := s.Do(t, http.MethodPatch, loc, rt, done, map[string]string{"If-Match": etag})
		apitest.WantStatus(t, fin, http.StatusOK)
		var c wireCall
		apitest.Decode(t, fin, &c)
		if c.Status != "succeeded" || c.ReceiptRef == nil || *c.ReceiptRef != "receipt://1" || c.EndedAt == nil ||
			*c.EndedAt != wireTime(epoch.Add(1500*time.Millisecond)) {
			t.Fatalf("finished %s", fin.Body)
		}
		newTag := fin.Header.Get("ETag")
		if newTag == "" || newTag == etag {
			t.Fatalf("ETag after finish %q, before %q: want a new one", newTag, etag)
		}
		// The same request again (same If-Match, now old) answers as the first did.
		again := s.Do(t, http.MethodPatch, loc, rt, done, map[string]string{"If-Match": etag})
		apitest.WantStatus(t, again, http.StatusOK)
		if string(again.Body) != string(fin.Body) || again.Header.Get("ETag") != newTag {
			t.Fatalf("repeat finish answered %s", again.Body)
		}
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, rt, finishBody(l.Token, "failed", ""), nil),
			http.StatusConflict, "illegal_transition")
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, rt, finishBody(l.Token, "failed", ""), map[string]string{"If-Match": newTag}),
			http.StatusConflict, "illegal_transition")
		// Without If-Match a finish goes through.
		r2 := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/calls", rt, recordBody(l.Token, 1, "r"), nil)
		apitest.WantStatus(t, r2, http.StatusCreated)
		apitest.WantStatus(t, s.Do(t, http.MethodPatch, r2.Header.Get("Location"), rt, finishBody(l.Token, "denied", ""), nil), http.StatusOK)
	}},

	{"FenceProblems", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, recordBody(l.Token+1, 0, "r"), nil), http.StatusConflict, "stale_lease")
		r := s.Do(t, http.MethodPost, path, rt, recordBody(l.Token, 0, "r"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, r.Header.Get("Location"), rt, finishBody(l.Token+1, "failed", ""), nil),
			http.StatusConflict, "stale_lease")
		s.Clock.Advance(61 * 1e9)
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, recordBody(l.Token, 1, "r"), nil), http.StatusConflict, "lease_expired")
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, r.Header.Get("Location"), rt, finishBody(l.Token, "failed", ""), nil),
			http.StatusConflict, "lease_expired")
		got := s.Do(t, http.MethodGet, r.Header.Get("Location"), rt, "", nil)
		var c wireCall
		apitest.Decode(t, got, &c)
		if c.Status != "started" || got.Header.Get("ETag") != r.Header.Get("ETag") {
			t.Fatalf("refused finishes changed the call: %s", got.Body)
		}
	}},

	{"BadInputIs400WithFieldErrors", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		ok := recordBody(l.Token, 0, "r")
		for _, c := range []struct {
			body   string
			fields []string
		}{
			{strings.Replace(ok, `"tool"`, `"telepathy"`, 1), []string{"kind"}},
			{strings.Replace(ok, `"sequence":0`, `"sequence":-1`, 1), []string{"sequence"}},
			{strings.Replace(ok, `"target":"tool://search/0",`, ``, 1), []string{"target"}},
			{strings.Replace(ok, `}`, `,"policyDecisionId":"nope"}`, 1), []string{"policyDecisionId"}},
			{strings.Replace(ok, `}`, `,"status":"succeeded"}`, 1), []string{"status"}},
			{strings.Replace(ok, `"fencingToken":1`, `"fencingToken":0`, 1), []string{"fencingToken"}},
			// 65 runes, 130 UTF-16 code units: over nvarchar(128).
			{strings.Replace(ok, `"r"`, `"`+strings.Repeat("\U0001F600", 65)+`"`, 1), []string{"requestHash"}},
			{`{}`, []string{"fencingToken", "sequence", "kind", "target", "requestHash"}},
		} {
			apitest.WantFields(t, s.Do(t, http.MethodPost, path, rt, c.body, nil), c.fields...)
		}
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, `{"fencingToken":`, nil), http.StatusBadRequest, "invalid_request")
		r := s.Do(t, http.MethodPost, path, rt, ok, nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		loc := r.Header.Get("Location")
		for _, c := range []struct {
			body   string
			fields []string
		}{
			{finishBody(l.Token, "started", ""), []string{"status"}},
			{fmt.Sprintf(`{"fencingToken":%d}`, l.Token), []string{"status"}},
			{fmt.Sprintf(`{"fencingToken":%d,"status":"failed","receiptRef":""}`, l.Token), []string{"receiptRef"}},
			{fmt.Sprintf(`{"fencingToken":%d,"status":"failed","endedAt":"2026-01-01T00:00:00Z"}`, l.Token), []string{"endedAt"}},
		} {
			apitest.WantFields(t, s.Do(t, http.MethodPatch, loc, rt, c.body, nil), c.fields...)
		}
		apitest.WantFields(t, s.Do(t, http.MethodPatch, path+"/nope", rt, finishBody(l.Token, "failed", ""), nil), "callId")
		apitest.WantFields(t, s.Do(t, http.MethodPost, "/v1/attempts/nope/calls", rt, ok, nil), "attemptId")
		list := s.Do(t, http.MethodGet, path, rt, "", nil)
		var page struct {
			Items []wireCall `json:"items"`
		}
		apitest.Decode(t, list, &page)
		if len(page.Items) != 1 || page.Items[0].Status != "started" {
			t.Fatalf("bad requests wrote: %s", list.Body)
		}
	}},

	{"RolesAndTenants", func(t *testing.T, s *stack) {
		_, admin, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		r := s.Do(t, http.MethodPost, path, rt, recordBody(l.Token, 0, "r"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		loc := r.Header.Get("Location")
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, admin, recordBody(l.Token, 1, "r"), nil), http.StatusForbidden, "forbidden")
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, admin, finishBody(l.Token, "failed", ""), nil), http.StatusForbidden, "forbidden")
		apitest.WantStatus(t, s.Do(t, http.MethodGet, path, admin, "", nil), http.StatusOK)
		apitest.WantStatus(t, s.Do(t, http.MethodGet, loc, admin, "", nil), http.StatusOK)

		_, otherAdmin, otherRT := s.TenantKeys(t)
		for _, b := range []string{recordBody(l.Token, 0, "r"), recordBody(l.Token, 1, "r")} {
			apitest.WantProblem(t, s.Do(t, http.MethodPost, path, otherRT, b, nil), http.StatusNotFound, "not_found")
		}
		apitest.WantProblem(t, s.Do(t, http.MethodPatch, loc, otherRT, finishBody(l.Token, "failed", ""), nil), http.StatusNotFound, "not_found")
		for _, p := range []string{path, loc} {
			apitest.WantProblem(t, s.Do(t, http.MethodGet, p, otherAdmin, "", nil), http.StatusNotFound, "not_found")
		}
		got := s.Do(t, http.MethodGet, loc, rt, "", nil)
		if got.Header.Get("ETag") != r.Header.Get("ETag") {
			t.Fatalf("another tenant's requests changed the call: %s", got.Body)
		}
	}},

	{"ListPagesWithCursor", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/calls"
		for _, seq := range []int{1, 4, 0, 2, 3} {
			apitest.WantStatus(t, s.Do(t, http.MethodPost, path, rt, recordBody(l.Token, seq, "r"), nil), http.StatusCreated)
		}
		var got []int
		for _, c := range apitest.Pages[wireCall](t, s.Stack, path, rt, 2, 4) {
			got = append(got, c.Sequence)
		}
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Fatalf("paged sequences %v", got)
		}
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"?cursor=eyJzIjoiYSJ9", rt, "", nil), "cursor") // {"s":"a"}
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"?limit=x", rt, "", nil), "limit")
	}},

	{"OpenAPIDocumentsTheRoutes", func(t *testing.T, s *stack) {
		doc := apitest.Served(t, s.Stack)
		doc.WantOperations(t, "/v1/attempts/{attemptId}/calls", "post", "get")
		doc.WantOperations(t, "/v1/attempts/{attemptId}/calls/{callId}", "get", "patch")
		doc.WantStringEnum(t, "Call", "kind", 4)
	}},
}
