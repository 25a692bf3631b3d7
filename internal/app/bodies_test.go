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

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/strictjson"
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
	raw, err := json.Marshal(st.Server.OpenAPI())
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
	var peak uint64
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
			peak = max(peak, alloc)
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
	t.Logf("%d routes; the most one request allocated: %.1f MiB", len(routes), float64(peak)/(1<<20))
}
