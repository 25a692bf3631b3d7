package admission

import (
	"context"
	"sync"
)

// gate lets at most size requests work at once and makes the others wait, serving the
// tenants with waiting requests in turn, one request each: however many requests one
// tenant has waiting, another tenant's next request waits for at most one of them (one
// turn of each busy tenant), so a flood slows the flooding tenant, not its neighbours.
//
// It shares the replica's work, not the database's: on the embedded database a request
// leaves the gate when its write goes to wait for the single writer (sqldb.OnWriteWait),
// whose group commit takes the tenants' writes in turn; a place held through that wait
// would cap how many writes share a commit. SQL Server's pool has no turns between
// tenants, so there a request keeps its place through its writes.
type gate struct {
	mu   sync.Mutex
	free int
	// waiting holds each tenant's waiting requests in arrival order; turn is the tenants
	// with waiting requests in the order they are served (a tenant served goes to the back).
	waiting map[string][]*waiter
	turn    []string
}

type waiter struct {
	ready   chan struct{}
	granted bool // under gate.mu: a slot was handed to it
}

func newGate(size int) *gate {
	if size <= 0 {
		return nil
	}
	return &gate{free: size, waiting: map[string][]*waiter{}}
}

// enter waits for tenant's turn and a free slot, or for ctx to end. leave gives the slot
// back; it is safe to call more than once (only the first call counts).
func (g *gate) enter(ctx context.Context, tenant string) (leave func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	g.mu.Lock()
	if g.free > 0 {
		// A free slot means nobody waits: slots are handed to waiters directly.
		g.free--
		g.mu.Unlock()
		return g.leaver(), nil
	}
	w := &waiter{ready: make(chan struct{})}
	if len(g.waiting[tenant]) == 0 {
		g.turn = append(g.turn, tenant)
	}
	g.waiting[tenant] = append(g.waiting[tenant], w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.leaver(), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted {
		// Handed a slot just as the caller left: pass it on.
		g.mu.Unlock()
		g.release()
		return nil, ctx.Err()
	}
	g.remove(tenant, w)
	g.mu.Unlock()
	return nil, ctx.Err()
}

func (g *gate) leaver() func() {
	var once sync.Once
	return func() { once.Do(g.release) }
}

// release hands the slot to the first waiting request of the tenant whose turn it is, or
// frees it when nobody waits.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.turn) == 0 {
		g.free++
		return
	}
	tenant := g.turn[0]
	g.turn = g.turn[1:]
	q := g.waiting[tenant]
	w := q[0]
	if len(q) == 1 {
		delete(g.waiting, tenant)
	} else {
		g.waiting[tenant] = q[1:]
		g.turn = append(g.turn, tenant)
	}
	w.granted = true
	close(w.ready)
}

// remove takes a waiter that gave up out of its tenant's queue. g.mu is held.
func (g *gate) remove(tenant string, w *waiter) {
	q := g.waiting[tenant]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		g.waiting[tenant] = q
		return
	}
	delete(g.waiting, tenant)
	for i, t := range g.turn {
		if t == tenant {
			g.turn = append(g.turn[:i:i], g.turn[i+1:]...)
			break
		}
	}
}
