package checkpoints_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

func body(token int64, seq int, hash string) string {
	return fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"phase":"acting","adapterStateRef":"blob://s/%d",`+
		`"adapterVersion":"1.0","hash":%q,"contextSnapshotRef":"ctx://c/%d"}`, token, seq, seq, hash, seq)
}

type wireCheckpoint struct {
	CheckpointID       string  `json:"checkpointId"`
	AttemptID          string  `json:"attemptId"`
	Sequence           int     `json:"sequence"`
	Phase              string  `json:"phase"`
	AdapterStateRef    string  `json:"adapterStateRef"`
	AdapterVersion     string  `json:"adapterVersion"`
	ContextSnapshotRef *string `json:"contextSnapshotRef"`
	Hash               string  `json:"hash"`
	CreatedAt          string  `json:"createdAt"`
	RunID              string  `json:"runId"`
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
	{"AppendCreatesRepeatsAndConflicts", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		r := s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		var c wireCheckpoint
		apitest.Decode(t, r, &c)
		if c.AttemptID != l.AttemptID || c.Sequence != 0 || c.Phase != "acting" || c.Hash != "h0" || c.AdapterVersion != "1.0" ||
			c.ContextSnapshotRef == nil || c.CreatedAt != "2026-01-01T12:00:00.000Z" {
			t.Fatalf("created %s", r.Body)
		}
		if loc := r.Header.Get("Location"); loc != path+"/"+c.CheckpointID {
			t.Fatalf("Location %q, want %q", loc, path+"/"+c.CheckpointID)
		}
		if et := r.Header.Get("ETag"); et != "" {
			t.Fatalf("a checkpoint has no version, but the answer carries ETag %s", et)
		}
		got := s.Do(t, http.MethodGet, r.Header.Get("Location"), rt, "", nil)
		apitest.WantStatus(t, got, http.StatusOK)
		if string(got.Body) != string(r.Body) {
			t.Fatalf("GET Location answered %s, want %s", got.Body, r.Body)
		}
		again := s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil)
		apitest.WantStatus(t, again, http.StatusOK)
		if string(again.Body) != string(r.Body) || again.Header.Get("Location") != "" {
			t.Fatalf("repeat answered %s (Location %q), want the stored row", again.Body, again.Header.Get("Location"))
		}
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h-other"), nil), http.StatusConflict, "sequence_conflict")
	}},

	{"FenceProblems", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, body(l.Token+1, 0, "h"), nil), http.StatusConflict, "stale_lease")
		apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/release", rt,
			fmt.Sprintf(`{"fencingToken":%d,"retryAfterSeconds":0}`, l.Token), nil), http.StatusOK)
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h"), nil), http.StatusConflict, "attempt_ended")
		next := s.ClaimLease(t, rt)
		apitest.WantProblem(t, s.Do(t, http.MethodPost, "/v1/attempts/"+next.AttemptID+"/checkpoints", rt, body(l.Token, 0, "h"), nil),
			http.StatusConflict, "stale_lease")
		list := s.Do(t, http.MethodGet, path, rt, "", nil)
		apitest.WantStatus(t, list, http.StatusOK)
		if string(list.Body) != "{\"items\":[]}\n" {
			t.Fatalf("refused writes left %s", list.Body)
		}
		// The attempt's lease passing refuses writes too.
		s.Clock.Advance(61 * 1e9)
		apitest.WantProblem(t, s.Do(t, http.MethodPost, "/v1/attempts/"+next.AttemptID+"/checkpoints", rt, body(next.Token, 0, "h"), nil),
			http.StatusConflict, "lease_expired")
	}},

	{"BadInputIs400WithFieldErrors", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		ok := body(l.Token, 0, "h")
		cases := []struct {
			body   string
			fields []string
		}{
			{strings.Replace(ok, `"hash":"h",`, ``, 1), []string{"hash"}},
			{strings.Replace(ok, `"acting"`, `"sleeping"`, 1), []string{"phase"}},
			{strings.Replace(ok, `"sequence":0`, `"sequence":-1`, 1), []string{"sequence"}},
			{strings.Replace(ok, `"sequence":0`, `"sequence":2147483648`, 1), []string{"sequence"}},
			{strings.Replace(ok, `"sequence":0`, `"sequence":"0"`, 1), []string{"sequence"}},
			{strings.Replace(ok, `"sequence":0`, `"sequence":1.5`, 1), []string{"sequence"}},
			{strings.Replace(ok, fmt.Sprintf(`"fencingToken":%d,`, l.Token), ``, 1), []string{"fencingToken"}},
			{strings.Replace(ok, `"1.0"`, `"`+strings.Repeat("v", 33)+`"`, 1), []string{"adapterVersion"}},
			// 17 runes, 34 UTF-16 code units: over nvarchar(32).
			{strings.Replace(ok, `"1.0"`, `"`+strings.Repeat("\U0001F600", 17)+`"`, 1), []string{"adapterVersion"}},
			{strings.Replace(ok, `"ctx://c/0"`, `""`, 1), []string{"contextSnapshotRef"}},
			{strings.Replace(ok, `"h"`, `"h\u0000"`, 1), []string{"hash"}},
			{strings.Replace(ok, `}`, `,"extra":1}`, 1), []string{"extra"}},
			{`{"fencingToken":1}`, []string{"sequence", "phase", "adapterStateRef", "adapterVersion", "hash"}},
		}
		for _, c := range cases {
			apitest.WantFields(t, s.Do(t, http.MethodPost, path, rt, c.body, nil), c.fields...)
		}
		for _, b := range []string{``, `{`, `[]`, `null`, ok + ok} {
			apitest.WantProblem(t, s.Do(t, http.MethodPost, path, rt, b, nil), http.StatusBadRequest, "invalid_request")
		}
		apitest.WantFields(t, s.Do(t, http.MethodPost, "/v1/attempts/not-a-uuid/checkpoints", rt, ok, nil), "attemptId")
		apitest.WantFields(t, s.Do(t, http.MethodGet, "/v1/runs/nope/checkpoints/last", rt, "", nil), "runId")
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"/nope", rt, "", nil), "checkpointId")
		list := s.Do(t, http.MethodGet, path, rt, "", nil)
		if string(list.Body) != "{\"items\":[]}\n" {
			t.Fatalf("bad requests wrote %s", list.Body)
		}
		// The same body, fixed, is accepted: the cases failed for their one fault.
		apitest.WantStatus(t, s.Do(t, http.MethodPost, path, rt, ok, nil), http.StatusCreated)
	}},

	{"RolesAndTenants", func(t *testing.T, s *stack) {
		_, admin, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		r := s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, admin, body(l.Token, 1, "h"), nil), http.StatusForbidden, "forbidden")
		apitest.WantProblem(t, s.Do(t, http.MethodPost, path, "", body(l.Token, 1, "h"), nil), http.StatusUnauthorized, "unauthorized")
		apitest.WantStatus(t, s.Do(t, http.MethodGet, path, admin, "", nil), http.StatusOK)
		apitest.WantStatus(t, s.Do(t, http.MethodGet, "/v1/runs/"+l.RunID+"/checkpoints/last", admin, "", nil), http.StatusOK)

		_, otherAdmin, otherRT := s.TenantKeys(t)
		for _, b := range []string{body(l.Token, 0, "h"), body(l.Token, 1, "h")} {
			apitest.WantProblem(t, s.Do(t, http.MethodPost, path, otherRT, b, nil), http.StatusNotFound, "not_found")
		}
		for _, p := range []string{path, r.Header.Get("Location"), "/v1/runs/" + l.RunID + "/checkpoints/last"} {
			apitest.WantProblem(t, s.Do(t, http.MethodGet, p, otherAdmin, "", nil), http.StatusNotFound, "not_found")
		}
		list := s.Do(t, http.MethodGet, path, rt, "", nil)
		var page struct {
			Items []wireCheckpoint `json:"items"`
		}
		apitest.Decode(t, list, &page)
		if len(page.Items) != 1 {
			t.Fatalf("owner sees %s", list.Body)
		}
	}},

	{"ListPagesWithCursor", func(t *testing.T, s *stack) {
		_, _, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		for _, seq := range []int{3, 0, 4, 1, 2} {
			apitest.WantStatus(t, s.Do(t, http.MethodPost, path, rt, body(l.Token, seq, "h"), nil), http.StatusCreated)
		}
		var got []int
		for _, c := range apitest.Pages[wireCheckpoint](t, s.Stack, path, rt, 2, 4) {
			got = append(got, c.Sequence)
		}
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Fatalf("paged sequences %v", got)
		}
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"?cursor=zzz", rt, "", nil), "cursor")
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"?limit=0", rt, "", nil), "limit")
		apitest.WantFields(t, s.Do(t, http.MethodGet, path+"?limit=501", rt, "", nil), "limit")
	}},

	{"LastFollowsTheContinuationChain", func(t *testing.T, s *stack) {
		_, admin, rt := s.TenantKeys(t)
		l := s.Lease(t, rt)
		last := "/v1/runs/" + l.RunID + "/checkpoints/last"
		p := apitest.WantProblem(t, s.Do(t, http.MethodGet, last, rt, "", nil), http.StatusNotFound, "not_found")
		if !strings.Contains(p.Detail, "has no checkpoint") {
			t.Fatalf("detail %q does not say the run has no checkpoint", p.Detail)
		}
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		apitest.WantStatus(t, s.Do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil), http.StatusCreated)
		r := s.Do(t, http.MethodPost, path, rt, body(l.Token, 1, "h1"), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		var want wireCheckpoint
		apitest.Decode(t, r, &want)
		apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/complete", rt,
			fmt.Sprintf(`{"fencingToken":%d,"state":"failed"}`, l.Token), nil), http.StatusOK)
		cont := s.Do(t, http.MethodPost, "/v1/runs/"+l.RunID+"/continue", admin, "", nil)
		apitest.WantStatus(t, cont, http.StatusCreated)
		var next struct {
			RunID string `json:"runId"`
		}
		apitest.Decode(t, cont, &next)
		r = s.Do(t, http.MethodGet, "/v1/runs/"+next.RunID+"/checkpoints/last", rt, "", nil)
		apitest.WantStatus(t, r, http.StatusOK)
		var got wireCheckpoint
		apitest.Decode(t, r, &got)
		if got.CheckpointID != want.CheckpointID || got.RunID != l.RunID || got.Sequence != 1 {
			t.Fatalf("continuation's last %s, want sequence 1 of run %s", r.Body, l.RunID)
		}
		p = apitest.WantProblem(t, s.Do(t, http.MethodGet, "/v1/runs/"+l.AttemptID+"/checkpoints/last", rt, "", nil),
			http.StatusNotFound, "not_found")
		if !strings.Contains(p.Detail, "no run") {
			t.Fatalf("detail %q does not say the run is missing", p.Detail)
		}
	}},

	{"OpenAPIDocumentsTheRoutes", func(t *testing.T, s *stack) {
		doc := apitest.Served(t, s.Stack)
		doc.WantOperations(t, "/v1/attempts/{attemptId}/checkpoints", "post", "get")
		doc.WantOperations(t, "/v1/attempts/{attemptId}/checkpoints/{checkpointId}", "get")
		doc.WantOperations(t, "/v1/runs/{runId}/checkpoints/last", "get")
		doc.WantStringEnum(t, "Checkpoint", "phase", 7)
	}},
}
