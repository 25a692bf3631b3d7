package console

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBoundedJSON: a stored value is shown compact; past the depth bound its arrays and
// objects are elided, past the byte bound it is cut on a character boundary, and the
// result says when it cut.
func TestBoundedJSON(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":[`, 20) + `1` + strings.Repeat(`]}`, 20)
	long := `"` + strings.Repeat("é", maxShownBytes) + `"`
	for _, tc := range []struct {
		name, in, want string
		cut            bool
	}{
		{"empty", ``, "—", false},
		{"compacted", "{ \"a\" : [ 1, \"x y\\\" ]\" ] }", `{"a":[1,"x y\" ]"]}`, false},
		{"brackets in strings", `["[[[[","}}"]`, `["[[[[","}}"]`, false},
		{"deep", deep, strings.Repeat(`{"a":[`, 8) + `{…}` + strings.Repeat(`]}`, 8), true},
	} {
		got := boundedJSON([]byte(tc.in))
		if got.Text != tc.want || got.Cut != tc.cut {
			t.Errorf("%s: %q cut=%v, want %q cut=%v", tc.name, got.Text, got.Cut, tc.want, tc.cut)
		}
	}
	got := boundedJSON([]byte(long))
	if !got.Cut || len(got.Text) > maxShownBytes+len(" …") || !utf8.ValidString(got.Text) || !strings.HasSuffix(got.Text, "é …") {
		t.Errorf("long: %d bytes, cut=%v, valid=%v, ends %q", len(got.Text), got.Cut, utf8.ValidString(got.Text), got.Text[len(got.Text)-8:])
	}
}
