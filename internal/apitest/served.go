package apitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// ServedDoc is what the routes' tests read of the OpenAPI document the service serves.
type ServedDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Type       any      `json:"type"`
			Enum       []string `json:"enum"`
			Properties map[string]struct {
				Ref string `json:"$ref"`
			} `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

// Served reads /openapi.json from s.
func Served(t testing.TB, s *Stack) ServedDoc {
	t.Helper()
	r := s.Do(t, http.MethodGet, "/openapi.json", "", "", nil)
	WantStatus(t, r, http.StatusOK)
	var doc ServedDoc
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("decode /openapi.json: %v", err)
	}
	return doc
}

// WantOperations fails t unless the document has each method (lower case) of path.
func (d ServedDoc) WantOperations(t testing.TB, path string, methods ...string) {
	t.Helper()
	for _, m := range methods {
		if _, ok := d.Paths[path][m]; !ok {
			t.Errorf("/openapi.json lacks %s %s", m, path)
		}
	}
}

// WantStringEnum fails t unless schema's property refers to a string enum of n names: a
// stored int travels as its wire name, and the document says so.
func (d ServedDoc) WantStringEnum(t testing.TB, schema, property string, n int) {
	t.Helper()
	ref := d.Components.Schemas[schema].Properties[property].Ref
	if e := d.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]; e.Type != "string" || len(e.Enum) != n {
		t.Errorf("%s.%s is documented as %s: %+v, want a string enum of %d", schema, property, ref, e, n)
	}
}
