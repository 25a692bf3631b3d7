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

// TestIdentProblemASCIIAgrees: the ASCII path answers exactly what the rune-by-rune path
// answers (problem text included), for every string of up to two ASCII bytes and every
// string of up to five of the bytes the rule treats specially, at limits below, at and
// above the length, as an identifier and as a path segment; and it leaves other bytes to
// the rune path.
func TestIdentProblemASCIIAgrees(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		for _, segment := range []bool{false, true} {
			for _, max := range []int{len(s) - 1, len(s), len(s) + 1} {
				got, ok := identProblemASCII(s, max, segment)
				if want := identProblem(s, max, segment); !ok || got != want {
					t.Fatalf("identProblemASCII(%q, %d, %v) = %q, %v; the rune path says %q", s, max, segment, got, ok, want)
				}
			}
		}
	}
	var all []string
	for b := range 128 {
		all = append(all, string(rune(b)))
	}
	check("")
	for _, a := range all {
		check(a)
		for _, b := range all {
			check(a + b)
		}
	}
	special := []string{" ", ".", "/", "a", "\t", "\x7f", "\x1f", "\n"}
	var grow func(s string, n int)
	grow = func(s string, n int) {
		check(s)
		if n == 0 {
			return
		}
		for _, c := range special {
			grow(s+c, n-1)
		}
	}
	grow("", 5)
	for _, s := range []string{"é", "a\u200b", "a\u00a0", string([]byte{'a', 0xff})} {
		if _, ok := identProblemASCII(s, 10, false); ok {
			t.Fatalf("identProblemASCII(%q) answered; only ASCII is its", s)
		}
	}
}

// BenchmarkIdentProblem: a checkpoint's three identifiers, as its validation checks them.
//
//	go test -run '^$' -bench IdentProblem -benchmem ./internal/validate/
func BenchmarkIdentProblem(b *testing.B) {
	ref, hash, version := "bench://state/1/3", "000000000000000c0000000000000003", "1.0"
	for b.Loop() {
		if IdentProblem(ref, 512, false)+IdentProblem(hash, 128, false)+IdentProblem(version, 32, true) != "" {
			b.Fatal("refused")
		}
	}
}
