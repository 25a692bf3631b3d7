package tenancy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// waitingOf is how many requests of tenant wait at g.
func waitingOf(g *gate, tenant string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting[tenant])
}

// enterAsync starts a request of tenant at g and returns the channel its leave func comes
// on once it has a slot, after it is seen waiting (so arrival order is the test's).
func enterAsync(t *testing.T, g *gate, ctx context.Context, tenant string) <-chan func() {
	t.Helper()
	before := waitingOf(g, tenant)
	got := make(chan func(), 1)
	go func() {
		leave, err := g.enter(ctx, tenant)
		if err != nil {
			close(got)
			return
		}
		got <- leave
	}()
	for waitingOf(g, tenant) == before {
		select {
		case leave := <-got:
			got <- leave // it had a slot at once
			return got
		default:
			runtime.Gosched()
		}
	}
	return got
}

// TestGateServesTenantsInTurn: one slot, held by the flooding tenant, which has three more
// requests waiting; a request of another tenant that arrives after them waits for one of
// them only.
func TestGateServesTenantsInTurn(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	ctx := context.Background()
	leave, err := g.enter(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	b1 := enterAsync(t, g, ctx, "b")
	b2 := enterAsync(t, g, ctx, "b")
	b3 := enterAsync(t, g, ctx, "b")
	a1 := enterAsync(t, g, ctx, "a")
	pending := map[string]<-chan func(){"b1": b1, "b2": b2, "b3": b3, "a1": a1}
	for _, want := range []string{"b1", "a1", "b2", "b3"} {
		leave()
		// Exactly one request gets the one slot: the next in turn.
		got := ""
		for got == "" {
			runtime.Gosched()
			for name, ch := range pending {
				select {
				case l := <-ch:
					got, leave = name, l
				default:
				}
				if got != "" {
					break
				}
			}
		}
		if got != want {
			t.Fatalf("%s had the slot, but it was %s's turn", got, want)
		}
		delete(pending, got)
	}
	leave()
	if g.free != 1 || len(g.turn) != 0 || len(g.waiting) != 0 {
		t.Fatalf("gate not back at rest: free %d, turn %v, waiting %v", g.free, g.turn, g.waiting)
	}
}

// TestGateWaiterThatLeavesTakesNothing: a waiting request whose client goes away leaves the
// queue, and the slot goes to the next one.
func TestGateWaiterThatLeavesTakesNothing(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	leave, err := g.enter(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	quitter := enterAsync(t, g, gone, "a")
	stayer := enterAsync(t, g, context.Background(), "c")
	cancel()
	if _, ok := <-quitter; ok {
		t.Fatal("a request whose context ended got a slot")
	}
	leave()
	leave = <-stayer
	leave()
	leave() // a second call gives nothing back twice
	if g.free != 1 || len(g.turn) != 0 || len(g.waiting) != 0 {
		t.Fatalf("gate not back at rest: free %d, turn %v, waiting %v", g.free, g.turn, g.waiting)
	}
	if _, err := g.enter(gone, "a"); err != nil {
		t.Fatalf("a free slot is taken even with an ended context: %v", err)
	}
}

// TestGateGrantedAsTheCallerLeft: a slot handed to a waiter whose context ended at the same
// time is passed on, not lost.
func TestGateGrantedAsTheCallerLeft(t *testing.T) {
	t.Parallel()
	g := newGate(1)
	w := &waiter{ready: make(chan struct{})}
	g.free = 0
	g.waiting["a"] = []*waiter{w}
	g.turn = []string{"a"}
	g.release() // grants w
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// enter's path after its select saw ctx end with w granted:
	g.mu.Lock()
	granted := w.granted
	g.mu.Unlock()
	if !granted {
		t.Fatal("release did not grant the waiter")
	}
	g.release() // what enter does for a granted waiter that left
	if g.free != 1 {
		t.Fatalf("free %d after the granted waiter left, want 1", g.free)
	}
	if _, err := g.enter(ctx, "x"); err != nil {
		t.Fatal(err)
	}
}

// TestLongPollGivesUpItsTurn: with one slot, a claim that holds a long poll gives the slot
// up while it waits, so another tenant's request is served meanwhile.
func TestLongPollGivesUpItsTurn(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	b, _ := newKey(t, store, "poller", RoleRuntime)
	other, _ := newKey(t, store, "other", RoleRuntime)
	a := NewAuthenticator(store)
	a.SetLimits(Limits{ReplicaActive: 1})
	polling, done := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- call(a, b, "192.0.2.1", func(c echo.Context) error {
			release, ok := HoldLongPoll(c.Request().Context())
			if !ok {
				return errors.New("long poll refused without a cap")
			}
			defer release()
			close(polling)
			<-done
			return nil
		})
	}()
	<-polling
	if err := call(a, other, "192.0.2.1", nil); err != nil {
		t.Fatalf("another tenant while the only slot's holder long-polls: %v", err)
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a.work.free != 1 {
		t.Fatalf("free %d after both requests, want 1", a.work.free)
	}
}

// TestWriteWaitGivesUpItsTurn: with one slot, a request whose write waits for the database
// (here: behind another write the test holds in the group commit) gives the slot up, so
// another request is worked on meanwhile, and its write joins the database's queue.
func TestWriteWaitGivesUpItsTurn(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	key, _ := newKey(t, store, "writer", RoleRuntime)
	other, _ := newKey(t, store, "other", RoleRuntime)
	a := NewAuthenticator(store)
	a.SetLimits(Limits{ReplicaActive: 1})
	ctx := context.Background()
	holding, hold := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(hold) })
	defer letGo() // on failure too: the database cannot close while the held write runs
	held := make(chan error, 1)
	go func() {
		held <- store.db.Write(ctx, sqldb.MaintenanceScope(), func(*sqldb.Tx) error {
			close(holding)
			<-hold
			return nil
		})
	}()
	<-holding // the writer is busy until hold closes
	errc := make(chan error, 1)
	entered := make(chan struct{})
	go func() {
		errc <- call(a, key, "192.0.2.1", func(c echo.Context) error {
			close(entered) // it holds the only slot
			return store.db.Write(c.Request().Context(), sqldb.TenantScope("writer"), func(*sqldb.Tx) error { return nil })
		})
	}()
	<-entered
	// Were the slot held through the write's wait, this request would wait for it until the
	// held write ends, which only happens after it: the bound turns that deadlock into a
	// failure.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+other)
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req = req.WithContext(bounded)
	if err := a.Require()(func(echo.Context) error { return nil })(echo.New().NewContext(req, httptest.NewRecorder())); err != nil {
		t.Fatalf("another request while the only slot's holder waits for its write: %v", err)
	}
	letGo()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a.work.free != 1 {
		t.Fatalf("free %d after both requests, want 1", a.work.free)
	}
}
