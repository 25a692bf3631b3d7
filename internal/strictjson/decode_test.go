package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		"2026-12-01T08:26:03.900Z": true, "2026-12-01T10:26:03+02:00": true, "0001-01-01T00:00:00Z": true,
		"9999-12-31T23:59:59.999Z": true, "9999-12-31T23:59:59-05:00": false, "0001-01-01T00:00:00+00:01": false,
		"2026-12-01": false, "2026-12-01T08:26:03": false, "": false,
	} {
		if _, why := ParseTime(in); (why == "") != ok {
			t.Errorf("ParseTime(%q): %q", in, why)
		}
	}
	// The reasons are api.Time's own.
	for in, want := range map[string]string{"x": NotRFC3339, "9999-12-31T23:59:59-05:00": OutsideTimes} {
		_, err := api.ParseTime(in)
		var ve *api.ValueError
		if !errors.As(err, &ve) || ve.Reason != want {
			t.Errorf("api.ParseTime(%q) = %v, want the reason %q", in, err, want)
		}
	}
}

// TestDepthCap: a body nests at most MaxDepth arrays and objects, its own object counted; a
// deeper one is refused whole, as malformed JSON is, and a field error at the cap's depth
// still names its whole path.
func TestDepthCap(t *testing.T) {
	t.Parallel()
	type body struct {
		Input json.RawMessage `json:"input"`
		N     int             `json:"n"`
	}
	deep := func(levels int) string { // levels arrays, the body's object around them
		return `{"input":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`
	}
	if err := Decode([]byte(deep(MaxDepth-1)), new(body)); err != nil {
		t.Fatalf("a body nested %d deep: %v", MaxDepth, err)
	}
	err := Decode([]byte(deep(MaxDepth)), new(body))
	if e, ok := apperr.As(err); !ok || len(e.Fields) != 0 || !strings.Contains(e.Detail, fmt.Sprintf("more than %d levels", MaxDepth)) {
		t.Fatalf("a body nested %d deep: %v, want the nesting refused", MaxDepth+1, err)
	}
	var m map[string]map[string][]body
	err = Decode([]byte(`{"a":{"b":[{"n":1},{"n":"x","n":2}]}}`), &m)
	e, ok := apperr.As(err)
	if !ok || len(e.Fields) != 1 || e.Fields[0].Field != "a.b[1].n" {
		t.Fatalf("got %v, want one error at a.b[1].n", err)
	}
}
