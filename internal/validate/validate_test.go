package validate

import "testing"

func TestValidIdent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s    string
		max  int
		want bool
	}{
		{"a", 1, true},
		{"ab", 1, false},
		{"", 5, false},
		{"ééé", 3, true}, // runes, not bytes
		{"a b", 3, true},
		{"a\tb", 3, false},
		{"a\x7fb", 3, false},
		{"\U0001F600", 1, false}, // outside the BMP: two UTF-16 units, as nvarchar counts
		{"\U0001F600", 2, true},
		{string([]byte{0xff}), 3, false},
		{"Case", 4, true},
		{" a", 3, false},
		{"a ", 3, false},
		{"a\u00a0", 3, false}, // no-break space is white space too
		{".", 3, false},
		{"..", 3, false},
		{"...", 3, true},
		{"a/b", 3, true}, // only a path segment refuses "/"
		{"a\u0085b", 3, false},
		{"日本語", 3, true},
		{"a\u200b", 3, false},  // zero-width space (Cf)
		{"\ufeffa", 3, false},  // byte order mark (Cf)
		{"a\u202eb", 3, false}, // right-to-left override (Cf)
		{"a\u3164", 3, false},  // Hangul filler (default ignorable)
		{"a\ufe0f", 3, false},  // variation selector
	}
	for _, c := range cases {
		if got := Ident(c.s, c.max); got != c.want {
			t.Errorf("Ident(%q, %d) = %v, want %v", c.s, c.max, got, c.want)
		}
	}
}
