package checkpoints_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
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
		_, _, rt := s.tenant(t)
		l := s.lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		r := s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil)
		wantStatus(t, r, http.StatusCreated)
		var c wireCheckpoint
		decode(t, r, &c)
		if c.AttemptID != l.AttemptID || c.Sequence != 0 || c.Phase != "acting" || c.Hash != "h0" || c.AdapterVersion != "1.0" ||
			c.ContextSnapshotRef == nil || c.CreatedAt != "2026-01-01T12:00:00Z" {
			t.Fatalf("created %s", r.body)
		}
		if loc := r.header.Get("Location"); loc != path+"/"+c.CheckpointID {
			t.Fatalf("Location %q, want %q", loc, path+"/"+c.CheckpointID)
		}
		if et := r.header.Get("ETag"); et != "" {
			t.Fatalf("a checkpoint has no version, but the answer carries ETag %s", et)
		}
		got := s.do(t, http.MethodGet, r.header.Get("Location"), rt, "", nil)
		wantStatus(t, got, http.StatusOK)
		if string(got.body) != string(r.body) {
			t.Fatalf("GET Location answered %s, want %s", got.body, r.body)
		}
		again := s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil)
		wantStatus(t, again, http.StatusOK)
		if string(again.body) != string(r.body) || again.header.Get("Location") != "" {
			t.Fatalf("repeat answered %s (Location %q), want the stored row", again.body, again.header.Get("Location"))
		}
		wantProblem(t, s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h-other"), nil), http.StatusConflict, "sequence_conflict")
	}},

	{"FenceProblems", func(t *testing.T, s *stack) {
		_, _, rt := s.tenant(t)
		l := s.lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		wantProblem(t, s.do(t, http.MethodPost, path, rt, body(l.Token+1, 0, "h"), nil), http.StatusConflict, "stale_lease")
		wantStatus(t, s.do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/release", rt,
			fmt.Sprintf(`{"fencingToken":%d,"retryAfterSeconds":0}`, l.Token), nil), http.StatusOK)
		wantProblem(t, s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h"), nil), http.StatusConflict, "lease_expired")
		next := s.claim(t, rt)
		wantProblem(t, s.do(t, http.MethodPost, "/v1/attempts/"+next.AttemptID+"/checkpoints", rt, body(l.Token, 0, "h"), nil),
			http.StatusConflict, "stale_lease")
		list := s.do(t, http.MethodGet, path, rt, "", nil)
		wantStatus(t, list, http.StatusOK)
		if string(list.body) != "{\"items\":[]}\n" {
			t.Fatalf("refused writes left %s", list.body)
		}
		// The attempt's lease passing refuses writes too.
		s.clock.Advance(61 * 1e9)
		wantProblem(t, s.do(t, http.MethodPost, "/v1/attempts/"+next.AttemptID+"/checkpoints", rt, body(next.Token, 0, "h"), nil),
			http.StatusConflict, "lease_expired")
	}},

	{"BadInputIs400WithFieldErrors", func(t *testing.T, s *stack) {
		_, _, rt := s.tenant(t)
		l := s.lease(t, rt)
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
			wantFields(t, s.do(t, http.MethodPost, path, rt, c.body, nil), c.fields...)
		}
		for _, b := range []string{``, `{`, `[]`, `null`, ok + ok} {
			wantProblem(t, s.do(t, http.MethodPost, path, rt, b, nil), http.StatusBadRequest, "invalid_request")
		}
		wantFields(t, s.do(t, http.MethodPost, "/v1/attempts/not-a-uuid/checkpoints", rt, ok, nil), "attemptId")
		wantFields(t, s.do(t, http.MethodGet, "/v1/runs/nope/checkpoints/last", rt, "", nil), "runId")
		wantFields(t, s.do(t, http.MethodGet, path+"/nope", rt, "", nil), "checkpointId")
		list := s.do(t, http.MethodGet, path, rt, "", nil)
		if string(list.body) != "{\"items\":[]}\n" {
			t.Fatalf("bad requests wrote %s", list.body)
		}
		// The same body, fixed, is accepted: the cases failed for their one fault.
		wantStatus(t, s.do(t, http.MethodPost, path, rt, ok, nil), http.StatusCreated)
	}},

	{"RolesAndTenants", func(t *testing.T, s *stack) {
		_, admin, rt := s.tenant(t)
		l := s.lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		r := s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h"), nil)
		wantStatus(t, r, http.StatusCreated)
		wantProblem(t, s.do(t, http.MethodPost, path, admin, body(l.Token, 1, "h"), nil), http.StatusForbidden, "forbidden")
		wantProblem(t, s.do(t, http.MethodPost, path, "", body(l.Token, 1, "h"), nil), http.StatusUnauthorized, "unauthorized")
		wantStatus(t, s.do(t, http.MethodGet, path, admin, "", nil), http.StatusOK)
		wantStatus(t, s.do(t, http.MethodGet, "/v1/runs/"+l.RunID+"/checkpoints/last", admin, "", nil), http.StatusOK)

		_, otherAdmin, otherRT := s.tenant(t)
		for _, b := range []string{body(l.Token, 0, "h"), body(l.Token, 1, "h")} {
			wantProblem(t, s.do(t, http.MethodPost, path, otherRT, b, nil), http.StatusNotFound, "not_found")
		}
		for _, p := range []string{path, r.header.Get("Location"), "/v1/runs/" + l.RunID + "/checkpoints/last"} {
			wantProblem(t, s.do(t, http.MethodGet, p, otherAdmin, "", nil), http.StatusNotFound, "not_found")
		}
		list := s.do(t, http.MethodGet, path, rt, "", nil)
		var page struct {
			Items []wireCheckpoint `json:"items"`
		}
		decode(t, list, &page)
		if len(page.Items) != 1 {
			t.Fatalf("owner sees %s", list.body)
		}
	}},

	{"ListPagesWithCursor", func(t *testing.T, s *stack) {
		_, _, rt := s.tenant(t)
		l := s.lease(t, rt)
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		for _, seq := range []int{3, 0, 4, 1, 2} {
			wantStatus(t, s.do(t, http.MethodPost, path, rt, body(l.Token, seq, "h"), nil), http.StatusCreated)
		}
		var got []int
		next := path + "?limit=2"
		for pages := 0; next != ""; pages++ {
			if pages > 3 {
				t.Fatalf("more pages than items")
			}
			r := s.do(t, http.MethodGet, next, rt, "", nil)
			wantStatus(t, r, http.StatusOK)
			var page struct {
				Items      []wireCheckpoint `json:"items"`
				NextCursor string           `json:"nextCursor"`
			}
			decode(t, r, &page)
			for _, c := range page.Items {
				got = append(got, c.Sequence)
			}
			next = ""
			if page.NextCursor != "" {
				next = path + "?limit=2&cursor=" + url.QueryEscape(page.NextCursor)
			}
		}
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Fatalf("paged sequences %v", got)
		}
		wantFields(t, s.do(t, http.MethodGet, path+"?cursor=zzz", rt, "", nil), "cursor")
		wantFields(t, s.do(t, http.MethodGet, path+"?limit=0", rt, "", nil), "limit")
		wantFields(t, s.do(t, http.MethodGet, path+"?limit=501", rt, "", nil), "limit")
	}},

	{"LastFollowsTheContinuationChain", func(t *testing.T, s *stack) {
		_, admin, rt := s.tenant(t)
		l := s.lease(t, rt)
		last := "/v1/runs/" + l.RunID + "/checkpoints/last"
		p := wantProblem(t, s.do(t, http.MethodGet, last, rt, "", nil), http.StatusNotFound, "not_found")
		if !strings.Contains(p.Detail, "has no checkpoint") {
			t.Fatalf("detail %q does not say the run has no checkpoint", p.Detail)
		}
		path := "/v1/attempts/" + l.AttemptID + "/checkpoints"
		wantStatus(t, s.do(t, http.MethodPost, path, rt, body(l.Token, 0, "h0"), nil), http.StatusCreated)
		r := s.do(t, http.MethodPost, path, rt, body(l.Token, 1, "h1"), nil)
		wantStatus(t, r, http.StatusCreated)
		var want wireCheckpoint
		decode(t, r, &want)
		wantStatus(t, s.do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/complete", rt,
			fmt.Sprintf(`{"fencingToken":%d,"state":"failed"}`, l.Token), nil), http.StatusOK)
		cont := s.do(t, http.MethodPost, "/v1/runs/"+l.RunID+"/continue", admin, "", nil)
		wantStatus(t, cont, http.StatusCreated)
		var next struct {
			RunID string `json:"runId"`
		}
		decode(t, cont, &next)
		r = s.do(t, http.MethodGet, "/v1/runs/"+next.RunID+"/checkpoints/last", rt, "", nil)
		wantStatus(t, r, http.StatusOK)
		var got wireCheckpoint
		decode(t, r, &got)
		if got.CheckpointID != want.CheckpointID || got.RunID != l.RunID || got.Sequence != 1 {
			t.Fatalf("continuation's last %s, want sequence 1 of run %s", r.body, l.RunID)
		}
		p = wantProblem(t, s.do(t, http.MethodGet, "/v1/runs/"+l.AttemptID+"/checkpoints/last", rt, "", nil),
			http.StatusNotFound, "not_found")
		if !strings.Contains(p.Detail, "no run") {
			t.Fatalf("detail %q does not say the run is missing", p.Detail)
		}
	}},

	{"OpenAPIDocumentsTheRoutes", func(t *testing.T, s *stack) {
		r := s.do(t, http.MethodGet, "/openapi.json", "", "", nil)
		wantStatus(t, r, http.StatusOK)
		var doc struct {
			Paths      map[string]map[string]json.RawMessage `json:"paths"`
			Components struct {
				Schemas map[string]struct {
					Properties map[string]struct {
						Type any      `json:"type"`
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatalf("decode /openapi.json: %v", err)
		}
		for _, want := range []struct {
			path    string
			methods []string
		}{{"/v1/attempts/{attemptId}/checkpoints", []string{"post", "get"}}, {"/v1/attempts/{attemptId}/checkpoints/{checkpointId}", []string{"get"}}, {"/v1/runs/{runId}/checkpoints/last", []string{"get"}}} {
			for _, m := range want.methods {
				if _, ok := doc.Paths[want.path][m]; !ok {
					t.Errorf("/openapi.json lacks %s %s", m, want.path)
				}
			}
		}
		// The stored int travels as its wire name, and the document says so.
		if f := doc.Components.Schemas["Checkpoint"].Properties["phase"]; f.Type != "string" || len(f.Enum) == 0 {
			t.Errorf("Checkpoint.phase is documented as %+v, want a string enum", f)
		}
	}},
}
