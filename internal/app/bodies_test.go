package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/strictjson"
	"github.com/ledger-dev/ledger/internal/web/openapi"
)

// bodyRoute is one operation of the document that takes a JSON body.
type bodyRoute struct {
	method, path string // the path with its parameters filled
	admin        bool
	members      []string // the top-level members its schema names
}

// bodyRoutes walks the served OpenAPI document for every operation with a request body.
func bodyRoutes(t *testing.T, st *apitest.Stack) []bodyRoute {
	t.Helper()
	raw, err := json.Marshal(openapi.Document(st.Server))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	var out []bodyRoute
	for p, methods := range doc.Paths {
		for method, opRaw := range methods {
			var op struct {
				Roles      []string `json:"x-roles"`
				Parameters []struct {
					Name, In string
					Schema   struct{ Format string }
				}
				RequestBody *struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						}
					}
				}
			}
			if json.Unmarshal(opRaw, &op) != nil || op.RequestBody == nil {
				continue
			}
			formats := map[string]string{}
			for _, prm := range op.Parameters {
				if prm.In == "path" {
					formats[prm.Name] = prm.Schema.Format
				}
			}
			path := param.ReplaceAllStringFunc(p, func(m string) string {
				if formats[strings.Trim(m, "{}")] == "uuid" {
					return uuid.NewString()
				}
				return "p1"
			})
			r := bodyRoute{method: strings.ToUpper(method), path: path, admin: !slices.Contains(op.Roles, "runtime")}
			name := strings.TrimPrefix(op.RequestBody.Content["application/json"].Schema.Ref, "#/components/schemas/")
			for m := range doc.Components.Schemas[name].Properties {
				r.members = append(r.members, m)
			}
			slices.Sort(r.members)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b bodyRoute) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return out
}

// nested is a JSON object nested depth deep whose members have keys of keyLen bytes, with
// value innermost.
func nested(depth, keyLen int, value string) string {
	key := `"` + strings.Repeat("k", keyLen) + `":`
	return strings.Repeat("{"+key, depth-1) + "{" + key + value + strings.Repeat("}", depth)
}

// TestWorstBodiesStayBounded sends each route of the document (walked, not listed) the
// bodies that cost the decoder most: nesting just past the cap with long names filling the
// body limit, nesting as deep as the body allows with short names, a value at the cap in
// each member the route takes, and a body of a hundred thousand unknown members. Each is
// answered, and the memory the whole request allocated (an upper bound of its peak heap)
// stays a small multiple of the body. Before the cap and the lazily made paths, one of
// these bodies allocated over a gigabyte.
func TestWorstBodiesStayBounded(t *testing.T) {
	// Not parallel: it measures the process's allocation around each request.
	const maxBody = 1 << 20
	st := apitest.New(t, apitest.Config{})
	tn := st.Tenant(t)
	contract, err := apitest.ContractOf(st.Server)
	if err != nil {
		t.Fatal(err)
	}
	routes := bodyRoutes(t, st)
	if len(routes) < 10 {
		t.Fatalf("the document has %d routes with a body; the walk is broken", len(routes))
	}

	longKey := (maxBody - 1024) / (strictjson.MaxDepth + 1)
	many := &strings.Builder{}
	many.WriteString("{")
	for i := 0; many.Len() < maxBody-1024; i++ {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(many, `"u%d":0`, i)
	}
	many.WriteString("}")
	type body struct {
		name   string
		text   string
		refuse bool // the body must be refused as invalid_request
	}
	peak := map[string]uint64{} // by kind of body, over the routes
	for _, r := range routes {
		bodies := []body{
			{"past the cap, long names", nested(strictjson.MaxDepth+1, longKey-8, "0"), true},
			{"deep, short names", nested(maxBody/26, 20, "0"), true},
			{"many unknown members", many.String(), true},
		}
		for _, m := range r.members {
			bodies = append(bodies, body{"at the cap in " + m,
				`{"` + m + `":` + nested(strictjson.MaxDepth-1, longKey-8, `"x"`) + `}`, false})
		}
		key := tn.Runtime
		if r.admin {
			key = tn.Admin
		}
		for _, b := range bodies {
			req := httptest.NewRequest(r.method, r.path, strings.NewReader(b.text))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("If-Match", `"0000000000000001"`)
			rec := httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			st.Server.Echo.ServeHTTP(rec, req)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			kind, _, _ := strings.Cut(b.name, " in ")
			peak[kind] = max(peak[kind], alloc)
			if msg := contract.Check(req, []byte(b.text), rec.Code, rec.Header(), rec.Body.Bytes()); msg != "" {
				t.Errorf("%s %s (%s): %s", r.method, r.path, b.name, msg)
			}
			if b.refuse && (rec.Code != http.StatusBadRequest || !bytes.Contains(rec.Body.Bytes(), []byte(`"invalid_request"`))) {
				t.Errorf("%s %s (%s): %d %.200s, want 400 invalid_request", r.method, r.path, b.name, rec.Code, rec.Body.Bytes())
			}
			// The body is read, checked, decoded and (once valid) stored: a few copies of
			// it, not one per level or per member.
			if limit := uint64(40*len(b.text) + 8<<20); alloc > limit {
				t.Fatalf("%s %s (%s, %d bytes): the request allocated %d MiB, want at most %d MiB",
					r.method, r.path, b.name, len(b.text), alloc>>20, limit>>20)
			}
		}
	}
	kinds := make([]string, 0, len(peak))
	for kind := range peak {
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	for _, kind := range kinds {
		t.Logf("%d routes, %s: at most %.1f MiB allocated by one request", len(routes), kind, float64(peak[kind])/(1<<20))
	}
}

// TestStoredDeepValuesStillRead: a value stored nested past what encoding/json re-reads (a
// row written before the depth cap, or put in the table by other means) does not make a
// read fail: the run list, the pending inbox, an attempt's decisions and its timeline, and
// the single reads, answer 200 with the value as a JSON string of its text.
func TestStoredDeepValuesStillRead(t *testing.T) {
	t.Parallel()
	st := apitest.New(t, apitest.Config{})
	tn := st.NewTenant(t)
	run := tn.Enqueue("deep", "interactive")
	cl, ok, _ := tn.Claim(60, nil)
	if !ok {
		t.Fatal("nothing claimed")
	}
	var d api.Decision
	tn.Must(http.StatusCreated, http.MethodPost, cl.Path("/decisions"), tn.Runtime, map[string]any{
		"fencingToken": cl.Lease.FencingToken, "kind": "choice", "options": []string{"a", "b"}}).Decode(t, &d)

	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	input, options := deep(10000), deep(20000)
	stamp := ", Version = (SELECT Value + 1 FROM RowVersionCounter)"
	ctx := t.Context()
	if _, err := st.DB.Raw().ExecContext(ctx, "UPDATE Runs SET Input = ?"+stamp+" WHERE RunId = ?", input, run.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.Raw().ExecContext(ctx, "UPDATE DecisionRequests SET OptionsJson = ?"+stamp+" WHERE DecisionId = ?", options, d.DecisionID); err != nil {
		t.Fatal(err)
	}

	asString := func(where string, raw json.RawMessage, want string) {
		t.Helper()
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != want {
			t.Errorf("%s: %.60s, want the stored text as a string", where, raw)
		}
	}
	var runs api.Page[api.Run]
	tn.Must(http.StatusOK, http.MethodGet, "/v1/runs", tn.Admin, nil).Decode(t, &runs)
	if len(runs.Items) != 1 {
		t.Fatalf("runs: %d items", len(runs.Items))
	}
	asString("GET /v1/runs", runs.Items[0].Input, input)
	var one api.Run
	tn.Must(http.StatusOK, http.MethodGet, "/v1/runs/"+run.RunID.String(), tn.Admin, nil).Decode(t, &one)
	asString("GET /v1/runs/{id}", one.Input, input)

	for _, path := range []string{"/v1/decisions?status=pending", cl.Path("/decisions")} {
		var page api.Page[api.Decision]
		tn.Must(http.StatusOK, http.MethodGet, path, tn.Admin, nil).Decode(t, &page)
		if len(page.Items) != 1 {
			t.Fatalf("%s: %d items", path, len(page.Items))
		}
		asString(path, page.Items[0].Options, options)
	}
	var timeline api.Page[api.TimelineEntry]
	tn.Must(http.StatusOK, http.MethodGet, cl.Path("/timeline"), tn.Admin, nil).Decode(t, &timeline)
	found := false
	for _, e := range timeline.Items {
		if e.Kind == api.TimelineDecision {
			var item api.Decision
			if err := json.Unmarshal(e.Item, &item); err != nil {
				t.Fatal(err)
			}
			asString("timeline", item.Options, options)
			found = true
		}
	}
	if !found {
		t.Fatalf("the timeline has no decision: %+v", timeline.Items)
	}
}
