// Package waits lets a read wait for a change to one row in this process: a GET with
// waitSeconds (a decision's close, a run's end) waits on a Hub that the writers notify
// after commit, and looks again on a poll interval for what another replica (or a clock)
// changed.
package waits

import (
	"context"
	"sync"
	"time"
)

// Key names the watched row: its tenant and its id.
type Key struct {
	Tenant string
	ID     string
}

// Hub wakes the waiters of a row when it is notified. The zero value is not usable: use
// NewHub.
type Hub struct {
	mu      sync.Mutex
	waiting map[Key]map[*waiter]struct{}
	closing chan struct{}
	closed  bool
}

type waiter struct{ woken chan struct{} }

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{waiting: map[Key]map[*waiter]struct{}{}, closing: make(chan struct{})}
}

// Notify wakes every waiter of k.
func (h *Hub) Notify(k Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiting[k] {
		select {
		case w.woken <- struct{}{}:
		default:
		}
	}
}

// Close answers every wait now and every later one at once (the server is shutting down:
// a wait must not hold the drain up).
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
}

// Closing is closed once Close was called: a wait of another kind (a long-poll claim)
// answers at once then too.
func (h *Hub) Closing() <-chan struct{} { return h.closing }

// Closed reports whether Close was called.
func (h *Hub) Closed() bool {
	select {
	case <-h.closing:
		return true
	default:
		return false
	}
}

// Waiting is how many waits of k are in progress (tests).
func (h *Hub) Waiting(k Key) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting[k])
}

func (h *Hub) join(k Key) *waiter {
	w := &waiter{woken: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting[k] == nil {
		h.waiting[k] = map[*waiter]struct{}{}
	}
	h.waiting[k][w] = struct{}{}
	return w
}

func (h *Hub) leave(k Key, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting[k], w)
	if len(h.waiting[k]) == 0 {
		delete(h.waiting, k)
	}
}

// Look is one read of the watched row: the row, whether the wait is over, and (zero for
// none) when the row will read differently without a write (a decision's expiry).
type Look[T any] func(ctx context.Context) (row T, done bool, changesAt time.Time, err error)

// Until reads k with look until look says done, the hub wakes it and a read says done, d
// has passed, ctx ends or the hub closes, and returns the last read (the current state when
// the wait ends unfinished). Between wakes it reads again every poll, for a write another
// replica made.
func Until[T any](ctx context.Context, h *Hub, k Key, d, poll time.Duration, look Look[T]) (T, error) {
	if d <= 0 {
		row, _, _, err := look(ctx)
		return row, err
	}
	deadline := time.Now().Add(d)
	for {
		// Join before reading, so a notice between the read and the wait is not missed.
		w := h.join(k)
		row, done, changesAt, err := look(ctx)
		left := time.Until(deadline)
		if err != nil || done || left <= 0 || ctx.Err() != nil {
			h.leave(k, w)
			return row, err
		}
		next := min(left, poll)
		if until := time.Until(changesAt); !changesAt.IsZero() && until > 0 {
			// A moment past it, so the read there sees the change. One already past with
			// no change read (the database's clock is behind) is left to the poll.
			next = min(next, until+time.Millisecond)
		}
		t := time.NewTimer(next)
		select {
		case <-w.woken:
		case <-t.C:
		case <-ctx.Done():
			err = ctx.Err()
		case <-h.closing:
			// Shutting down: the state just read is the answer, at once.
			t.Stop()
			h.leave(k, w)
			return row, nil
		}
		t.Stop()
		h.leave(k, w)
		if err != nil {
			return row, err
		}
	}
}
