package waits_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/waits"
)

// row is a watched value: done once set.
type row struct{ v atomic.Int64 }

func (r *row) look(reads *atomic.Int64) waits.Look[int64] {
	return func(context.Context) (int64, bool, time.Time, error) {
		reads.Add(1)
		v := r.v.Load()
		return v, v != 0, time.Time{}, nil
	}
}

// waitFor polls cond (the test's own sync, not a timing expectation).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

type result struct {
	v   int64
	err error
	d   time.Duration
}

func start(h *waits.Hub, k waits.Key, d, poll time.Duration, look waits.Look[int64]) <-chan result {
	out := make(chan result, 1)
	go func() {
		t0 := time.Now()
		v, err := waits.Until(context.Background(), h, k, d, poll, look)
		out <- result{v, err, time.Since(t0)}
	}()
	return out
}

func TestNotifyWakesTheWaitersOfItsKeyOnly(t *testing.T) {
	t.Parallel()
	h := waits.NewHub()
	k, other := waits.Key{Tenant: "a", ID: "x"}, waits.Key{Tenant: "b", ID: "x"}
	var r row
	var reads atomic.Int64
	got := start(h, k, time.Minute, time.Hour, r.look(&reads))
	waitFor(t, func() bool { return h.Waiting(k) == 1 })
	r.v.Store(7)
	h.Notify(other) // another tenant's row of the same id: no wake
	time.Sleep(20 * time.Millisecond)
	if n := reads.Load(); n != 1 {
		t.Fatalf("another key's notice made %d reads, want 1", n)
	}
	h.Notify(k)
	res := <-got
	if res.v != 7 || res.err != nil {
		t.Fatalf("got %d %v, want 7", res.v, res.err)
	}
	if h.Waiting(k) != 0 {
		t.Fatal("the waiter is still in the hub")
	}
}

func TestUntilAnswersAtTheTimeoutWithTheCurrentState(t *testing.T) {
	t.Parallel()
	h := waits.NewHub()
	k := waits.Key{Tenant: "a", ID: "x"}
	var r row
	var reads atomic.Int64
	res := <-start(h, k, 50*time.Millisecond, time.Hour, r.look(&reads))
	if res.v != 0 || res.err != nil || res.d < 50*time.Millisecond {
		t.Fatalf("got %d %v after %s, want 0 after the timeout", res.v, res.err, res.d)
	}
	// No wait asked: one read, at once.
	res = <-start(h, k, 0, time.Hour, r.look(&reads))
	if res.v != 0 || reads.Load() != 3 {
		t.Fatalf("got %d after %d reads, want 0 after 3", res.v, reads.Load())
	}
}

func TestUntilPollsForAChangeNoOneNotified(t *testing.T) {
	t.Parallel()
	h := waits.NewHub()
	k := waits.Key{Tenant: "a", ID: "x"}
	var r row
	var reads atomic.Int64
	got := start(h, k, time.Minute, 5*time.Millisecond, r.look(&reads))
	waitFor(t, func() bool { return reads.Load() >= 2 })
	r.v.Store(3) // another replica's write: no notice
	if res := <-got; res.v != 3 {
		t.Fatalf("got %d, want 3", res.v)
	}
}

func TestUntilLooksAgainWhenTheRowChangesWithoutAWrite(t *testing.T) {
	t.Parallel()
	h := waits.NewHub()
	k := waits.Key{Tenant: "a", ID: "x"}
	at := time.Now().Add(30 * time.Millisecond)
	res := <-start(h, k, time.Minute, time.Hour, func(context.Context) (int64, bool, time.Time, error) {
		if time.Now().After(at) {
			return 1, true, time.Time{}, nil
		}
		return 0, false, at, nil
	})
	if res.v != 1 || res.d > 30*time.Second {
		t.Fatalf("got %d after %s, want 1 at the expiry", res.v, res.d)
	}
}

func TestCloseAnswersEveryWaitAtOnce(t *testing.T) {
	t.Parallel()
	h := waits.NewHub()
	k := waits.Key{Tenant: "a", ID: "x"}
	var r row
	var reads atomic.Int64
	a, b := start(h, k, time.Minute, time.Hour, r.look(&reads)), start(h, k, time.Minute, time.Hour, r.look(&reads))
	waitFor(t, func() bool { return h.Waiting(k) == 2 })
	h.Close()
	for _, ch := range []<-chan result{a, b} {
		if res := <-ch; res.v != 0 || res.err != nil {
			t.Fatalf("got %d %v, want the current state", res.v, res.err)
		}
	}
	// A wait after Close does not wait either.
	if res := <-start(h, k, time.Minute, time.Hour, r.look(&reads)); res.d > 30*time.Second {
		t.Fatalf("a wait after Close took %s", res.d)
	}
	h.Close() // twice is fine
}
