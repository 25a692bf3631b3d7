package bench

import (
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Histogram is a log-linear latency histogram in the manner of HDR: values below 128 ns
// are exact, larger ones fall in buckets 1/64 of their power of two wide, so a percentile
// read from it is within 1/64 (1.6 %) of the true sample, whatever the count. It holds a
// fixed array of counters (about 30 KiB), so memory does not grow with the operations.
type Histogram struct {
	counts [histBuckets]int64
	n      int64
	sum    time.Duration
	min    time.Duration
	max    time.Duration
}

const (
	subBits     = 7
	subCount    = 1 << subBits // exact values below this
	half        = subCount / 2
	histBuckets = (63-subBits+1)*half + subCount
)

func bucketOf(v time.Duration) int {
	if v < 0 {
		v = 0
	}
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits
	return e*half + int(uint64(v)>>e)
}

// bucketHigh is the largest value that falls in bucket i.
func bucketHigh(i int) time.Duration {
	if i < subCount {
		return time.Duration(i)
	}
	e := i/half - 1
	m := int64(i - e*half)
	return time.Duration(m<<e + (int64(1)<<e - 1))
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples.
func (h *Histogram) Count() int64 { return h.n }

// Max is the largest sample (exact).
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average sample (exact).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Percentile is the nearest-rank percentile p (0 < p <= 100): the smallest recorded value
// that at least p % of the samples do not exceed, to the bucket's precision (never above
// the largest sample). It is 0 without samples.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(p / 100 * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(bucketHigh(i), h.min), h.max)
		}
	}
	return h.max
}

// Recorder collects one result row's operations from many goroutines: the latencies of
// the successful ones and the count of failures by problem code. Only operations that end
// before the recorder's window closes count.
type Recorder struct {
	mu     sync.Mutex
	hist   Histogram
	errors map[string]int64
	ok     atomic.Int64
	failed atomic.Int64
	end    atomic.Int64 // unix nanoseconds after which nothing is recorded; 0: open
}

// NewRecorder returns an empty recorder with an open window.
func NewRecorder() *Recorder { return &Recorder{errors: map[string]int64{}} }

// CloseAt makes the recorder ignore operations that end after t.
func (r *Recorder) CloseAt(t time.Time) { r.end.Store(t.UnixNano()) }

// Record adds one operation that took d; code is "" for a success, else the problem code
// (or a transport failure's name). It reports whether the operation counted.
func (r *Recorder) Record(d time.Duration, code string) bool {
	if end := r.end.Load(); end != 0 && time.Now().UnixNano() > end {
		return false
	}
	r.mu.Lock()
	if code == "" {
		r.hist.Record(d)
	} else {
		r.errors[code]++
	}
	r.mu.Unlock()
	if code == "" {
		r.ok.Add(1)
	} else {
		r.failed.Add(1)
	}
	return true
}

// Counts are the successful and failed operations so far (cheap; for the progress line).
func (r *Recorder) Counts() (ok, failed int64) { return r.ok.Load(), r.failed.Load() }

// Snapshot copies the histogram and the error counts.
func (r *Recorder) Snapshot() (Histogram, map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := make(map[string]int64, len(r.errors))
	for k, v := range r.errors {
		errs[k] = v
	}
	return r.hist, errs
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Sum is the total of the samples (exact).
func (h *Histogram) Sum() time.Duration { return h.sum }
