package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// exactPercentile is the nearest-rank percentile of sorted samples.
func exactPercentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestBucketsCoverEveryValueWithinPrecision(t *testing.T) {
	t.Parallel()
	prev := -1
	check := func(v time.Duration) {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("value %d: bucket %d out of range", v, i)
		}
		high := bucketHigh(i)
		if high < v {
			t.Fatalf("value %d: bucket %d ends at %d, below the value", v, i, high)
		}
		if v >= subCount && float64(high-v)/float64(v) > 1.0/half {
			t.Fatalf("value %d: bucket %d ends at %d, more than 1/%d above", v, i, high, half)
		}
		if v < subCount && high != v {
			t.Fatalf("value %d below %d is not exact: bucket ends at %d", v, subCount, high)
		}
		if i < prev {
			t.Fatalf("value %d: bucket %d below the previous value's %d", v, i, prev)
		}
		prev = i
	}
	for v := time.Duration(0); v < 1<<16; v++ {
		check(v)
	}
	for v := time.Duration(1 << 16); v > 0 && v < math.MaxInt64/3; v = v*3/2 + 7 {
		check(v - 1)
		check(v)
	}
	prev = -1
	check(math.MaxInt64)
	// The first value of every bucket maps to it, and the value after its end to the next.
	for i := subCount; i < bucketOf(math.MaxInt64); i++ {
		if got := bucketOf(bucketHigh(i) + 1); got != i+1 {
			t.Fatalf("value after bucket %d's end falls in %d", i, got)
		}
	}
}

func TestPercentilesMatchSortedSamples(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 1000, 100_000} {
		var h Histogram
		samples := make([]time.Duration, n)
		for i := range samples {
			// Log-normal around 2 ms, with a long tail: what request latencies look like.
			samples[i] = time.Duration(math.Exp(rnd.NormFloat64()*1.2) * float64(2*time.Millisecond))
			h.Record(samples[i])
		}
		slices.Sort(samples)
		for _, p := range []float64{0.1, 1, 25, 50, 90, 95, 99, 99.9, 100} {
			want := exactPercentile(samples, p)
			got := h.Percentile(p)
			if got < want || float64(got-want) > float64(want)/half {
				t.Errorf("n=%d p%v: got %v, want %v (within 1/%d above)", n, p, got, want, half)
			}
		}
		if h.Count() != int64(n) || h.Max() != samples[n-1] {
			t.Errorf("n=%d: count %d max %v, want %d %v", n, h.Count(), h.Max(), n, samples[n-1])
		}
		if h.Percentile(100) != samples[n-1] {
			t.Errorf("n=%d: p100 %v is not the largest sample %v", n, h.Percentile(100), samples[n-1])
		}
	}
}

func TestPercentileSmallExactValues(t *testing.T) {
	t.Parallel()
	var h Histogram
	for v := 1; v <= 100; v++ {
		h.Record(time.Duration(v))
	}
	for p, want := range map[float64]time.Duration{50: 50, 95: 95, 99: 99, 100: 100, 0.5: 1} {
		if got := h.Percentile(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := h.Mean(); got != 50 { // 5050/100, truncated
		t.Errorf("mean %v, want 50", got)
	}
	if got := h.Sum(); got != 5050 {
		t.Errorf("sum %v, want 5050", got)
	}
}

func TestEmptyAndSingleSample(t *testing.T) {
	t.Parallel()
	var h Histogram
	if h.Percentile(50) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatalf("empty histogram reports %v %v %v", h.Percentile(50), h.Mean(), h.Max())
	}
	h.Record(1234567 * time.Nanosecond)
	for _, p := range []float64{1, 50, 99, 100} {
		if got := h.Percentile(p); got != 1234567 {
			t.Errorf("one sample: p%v = %v, want the sample (clamped to the largest)", p, got)
		}
	}
	h.Record(-5) // a clock step back counts as zero
	if got := h.Percentile(1); got != 0 {
		t.Errorf("negative sample: p1 = %v, want 0", got)
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	var a, b, all Histogram
	for i := range 5000 {
		v := time.Duration(rnd.Int64N(int64(50 * time.Millisecond)))
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	a.Merge(&b)
	if a != all {
		t.Fatalf("merged histogram differs from one that recorded everything: count %d/%d, max %v/%v",
			a.Count(), all.Count(), a.Max(), all.Max())
	}
	var empty Histogram
	empty.Merge(&all)
	if empty != all {
		t.Fatal("merging into an empty histogram lost its min or max")
	}
}

func TestRecorderCountsFailuresApartAndClosesItsWindow(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				code := ""
				if i%100 == 0 {
					code = []string{"stale_lease", "timeout"}[g%2]
				}
				r.Record(time.Duration(i)*time.Microsecond, code)
			}
		}()
	}
	wg.Wait()
	ok, failed := r.Counts()
	if ok != 8*990 || failed != 8*10 {
		t.Fatalf("counts ok=%d failed=%d, want %d and %d", ok, failed, 8*990, 8*10)
	}
	h, errs := r.Snapshot()
	if h.Count() != ok {
		t.Fatalf("histogram holds %d samples, want only the %d successes", h.Count(), ok)
	}
	if errs["stale_lease"] != 40 || errs["timeout"] != 40 || len(errs) != 2 {
		t.Fatalf("errors by code %v", errs)
	}
	r.CloseAt(time.Now().Add(-time.Millisecond))
	if r.Record(time.Millisecond, "") || r.Record(time.Millisecond, "timeout") {
		t.Fatal("an operation that ended after the window closed was recorded")
	}
	if ok2, failed2 := r.Counts(); ok2 != ok || failed2 != failed {
		t.Fatalf("counts moved after the window closed: %d %d", ok2, failed2)
	}
	errs["mutated"] = 1
	if _, again := r.Snapshot(); again["mutated"] != 0 {
		t.Fatal("Snapshot shares its error map with the recorder")
	}
}
