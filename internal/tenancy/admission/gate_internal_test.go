package admission

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
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

// serveAs sends one request of tenant through the controller; inside runs in the handler.
func serveAs(c *Controller, tenant string, inside echo.HandlerFunc) error {
	if inside == nil {
		inside = func(echo.Context) error { return nil }
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	return c.Serve(echo.New().NewContext(req, httptest.NewRecorder()), tenant, inside)
}

// openDB is a SQLite database, whose writes wait for the single writer; the writes here
// touch no table, so it needs no schema.
func openDB(t *testing.T) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(t.Context(), sqldb.Config{DSN: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestLongPollGivesUpItsTurn: with one slot, a claim that holds a long poll gives the slot
// up while it waits, so another tenant's request is served meanwhile.
func TestLongPollGivesUpItsTurn(t *testing.T) {
	t.Parallel()
	b := "poller"
	other := "other"
	a := New(Limits{ReplicaActive: 1})
	polling, done := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- serveAs(a, b, func(c echo.Context) error {
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
	if err := serveAs(a, other, nil); err != nil {
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
	key := "writer"
	other := "other"
	a := New(Limits{ReplicaActive: 1})
	db := openDB(t)
	ctx := context.Background()
	holding, hold := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(hold) })
	defer letGo() // on failure too: the database cannot close while the held write runs
	held := make(chan error, 1)
	go func() {
		held <- db.Write(ctx, sqldb.MaintenanceScope(), func(*sqldb.Tx) error {
			close(holding)
			<-hold
			return nil
		})
	}()
	<-holding // the writer is busy until hold closes
	errc := make(chan error, 1)
	entered := make(chan struct{})
	go func() {
		errc <- serveAs(a, key, func(c echo.Context) error {
			close(entered) // it holds the only slot
			return db.Write(c.Request().Context(), sqldb.TenantScope("writer"), func(*sqldb.Tx) error { return nil })
		})
	}()
	<-entered
	// Were the slot held through the write's wait, this request would wait for it until the
	// held write ends, which only happens after it: the bound turns that deadlock into a
	// failure.
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(bounded, http.MethodGet, "/", nil)
	if err := a.Serve(echo.New().NewContext(req, httptest.NewRecorder()), other, func(echo.Context) error { return nil }); err != nil {
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

// TestTenantInFlightCapLeavesOtherTenantsAlone holds a tenant's every slot in flight: its
// next request is 429 with Retry-After, another tenant's is served, and a slot given back
// serves the first tenant again.
func TestTenantInFlightCapLeavesOtherTenantsAlone(t *testing.T) {
	t.Parallel()
	b := "busy"
	other := "quiet"
	a := New(Limits{InFlight: 2})

	entered, leave := make(chan struct{}), make(chan struct{})
	done := make(chan error, 2)
	for range 2 {
		go func() {
			done <- serveAs(a, b, func(echo.Context) error { entered <- struct{}{}; <-leave; return nil })
		}()
		<-entered
	}
	err := serveAs(a, b, nil)
	if e, ok := apperr.As(err); !ok || e.Code != api.CodeRateLimited || e.RetryAfter <= 0 {
		t.Fatalf("the busy tenant's third request: %v, want rate_limited with Retry-After", err)
	}
	if err := serveAs(a, other, nil); err != nil {
		t.Fatalf("another tenant while the first is at its cap: %v", err)
	}
	leave <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := serveAs(a, b, nil); err != nil {
		t.Fatalf("the busy tenant once a slot is back: %v", err)
	}
	close(leave)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := a.inFlight.held("busy"); n != 0 {
		t.Fatalf("%d slots still held after every request ended", n)
	}
}

// TestLongPollSlotsPerTenant: a tenant's long polls are capped apart from its other
// requests and from other tenants'; a released slot serves again, once.
func TestLongPollSlotsPerTenant(t *testing.T) {
	t.Parallel()
	b := "polls"
	other := "polls-other"
	a := New(Limits{LongPolls: 1})

	var release func()
	if err := serveAs(a, b, func(c echo.Context) error {
		var ok bool
		release, ok = HoldLongPoll(c.Request().Context())
		if !ok {
			t.Fatal("the first long poll was refused")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	hold := func(token string) bool {
		var ok bool
		if err := serveAs(a, token, func(c echo.Context) error {
			var r func()
			if r, ok = HoldLongPoll(c.Request().Context()); ok {
				r()
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if hold(b) {
		t.Fatal("a second long poll of the tenant was let wait past its cap of 1")
	}
	if !hold(other) {
		t.Fatal("another tenant's long poll was refused")
	}
	release()
	release() // a second release gives back nothing more
	if !hold(b) {
		t.Fatal("the tenant's long poll after the slot was given back was refused")
	}
	if n := a.polls.held("polls"); n != 0 {
		t.Fatalf("%d long-poll slots held after release", n)
	}
	// Without the authenticator (a service called directly) there is no cap.
	if r, ok := HoldLongPoll(context.Background()); !ok {
		t.Fatal("a context without a tenant was refused a long poll")
	} else {
		r()
	}
}
