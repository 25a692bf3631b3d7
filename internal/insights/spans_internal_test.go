package insights

import (
	"math/rand/v2"
	"testing"
)

// TestSpansTileTheWindow: spans covers [lo, hi) exactly, in order, each range aligned to
// its grain, with at most one range of each narrower grain on each side of the widest, so
// a 500-day window by day reads at most 31 coarse buckets and 30 days.
func TestSpansTileTheWindow(t *testing.T) {
	t.Parallel()
	chain := []int64{300, 3600, 86400, int64(coarseGrain.Seconds())}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		lo := 1_700_000_000 - 1_700_000_000%300 + r.Int64N(1000)*300
		hi := lo + r.Int64N(200_000)*300
		got := spans(lo, hi, chain)
		at, per := lo, map[int64]int{}
		for _, s := range got {
			if s.lo != at || s.hi <= s.lo || s.lo%s.grain != 0 || s.hi%s.grain != 0 {
				t.Fatalf("spans(%d, %d) = %v: %v does not continue at %d aligned", lo, hi, got, s, at)
			}
			at = s.hi
			per[s.grain]++
		}
		if at != hi && lo < hi {
			t.Fatalf("spans(%d, %d) = %v ends at %d", lo, hi, got, at)
		}
		for g, n := range per {
			if n > 2 {
				t.Fatalf("spans(%d, %d) = %v: %d ranges of grain %d", lo, hi, got, n, g)
			}
		}
	}
	day := int64(86400)
	lo := 20_000 * day
	most := 0
	for off := range int64(16) {
		n := int64(0)
		for _, s := range spans(lo+off*day, lo+(off+500)*day, chain[2:]) {
			n += (s.hi - s.lo) / s.grain
		}
		most = max(most, int(n))
	}
	if most > 31+30 {
		t.Fatalf("a 500-day window by day reads up to %d buckets", most)
	}
}
