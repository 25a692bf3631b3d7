package optable_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/optable"
)

// TestOperationsFileIsFresh: api/operations.json is what the served document and
// api/retry.json make, and the api package's embedded copy reads as the same table.
func TestOperationsFileIsFresh(t *testing.T) {
	t.Parallel()
	doc, err := app.Document(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	retry, err := os.ReadFile("../../api/retry.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := optable.Build(doc, retry)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../api/operations.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("api/operations.json is stale: run scripts/regenerate")
	}
	if len(api.Endpoints()) == 0 {
		t.Fatal("the api package's table is empty")
	}
	for id, e := range api.Endpoints() {
		if !strings.HasPrefix(e.Path, "/") || e.Method == "" || e.Repeat == "" {
			t.Errorf("%s: %+v", id, e)
		}
	}
}

// TestBuildRefusesATableOutOfStep: an operation without a retry rule, a rule without an
// operation and an unknown repeat class are each refused by name.
func TestBuildRefusesATableOutOfStep(t *testing.T) {
	t.Parallel()
	doc := `{"paths": {"/v1/things/{id}": {"get": {"operationId": "getThing", "security": [{"bearer": []}], "x-roles": ["admin"]},
		"head": {"operationId": "getThingHead"}}}}`
	classes := `"repeatClasses": {"once": "", "idempotent": ""}`
	for _, tc := range []struct{ name, retry, want string }{
		{"NoRule", `{` + classes + `, "operations": {}}`, "getThing (GET /v1/things/{id}) has no entry"},
		{"NoRoute", `{` + classes + `, "operations": {"getThing": {"repeat": "idempotent"}, "getGone": {"repeat": "once"}}}`, "has getGone, which the OpenAPI document does not"},
		{"UnknownClass", `{` + classes + `, "operations": {"getThing": {"repeat": "twice"}}}`, "unknown repeat class twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := optable.Build([]byte(doc), []byte(tc.retry))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v, want %q", err, tc.want)
			}
		})
	}
	out, err := optable.Build([]byte(doc), []byte(`{`+classes+`, "operations": {"getThing": {"repeat": "idempotent"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"getThing": {
      "method": "GET",
      "path": "/v1/things/{id}",
      "query": [],
      "public": false,
      "roles": [
        "admin"
      ],
      "repeat": "idempotent"
    }`; !strings.Contains(string(out), want) || strings.Contains(string(out), "getThingHead") {
		t.Fatalf("Build wrote\n%s", out)
	}
}
