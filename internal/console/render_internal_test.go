package console

import (
	"strings"
	"testing"
	"time"
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

// TestFmtDuration: durations read in the units a person uses, never raw milliseconds
// (issue 29 item 5: "10000" and "17268" were shown as they were stored).
func TestFmtDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "0 s"},
		{-5, "0 s"},
		{1, "1 ms"},
		{250, "250 ms"},
		{999, "999 ms"},
		{1000, "1 s"},
		{2500, "2.5 s"},
		{10000, "10 s"},
		{17268, "17.3 s"},
		{59960, "1 min"},
		{60000, "1 min"},
		{90000, "1 min 30 s"},
		{125000, "2 min 5 s"},
		{3599600, "1 h"},
		{3600000, "1 h"},
		{3780000, "1 h 3 min"},
		{86400000, "1 d"},
		{86400000 + 4*3600000, "1 d 4 h"},
	} {
		if got := fmtDuration(time.Duration(tc.ms) * time.Millisecond); got != tc.want {
			t.Errorf("fmtDuration(%d ms) = %q, want %q", tc.ms, got, tc.want)
		}
		if got := fmtMs(&tc.ms); got != tc.want {
			t.Errorf("fmtMs(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	if got := fmtMs(nil); got != "—" {
		t.Errorf("fmtMs(nil) = %q, want —", got)
	}
}
