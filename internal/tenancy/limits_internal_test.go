package tenancy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// These tests drive the authenticator's clock, so they live inside the package; dbtest
// imports this package, so they open their database themselves.

func openStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	mg.Close()
	return NewStore(db)
}

func newKey(t *testing.T, s *Store, tenant, role string) (string, Key) {
	t.Helper()
	token, k, err := s.CreateKey(context.Background(), tenant, role)
	if err != nil {
		t.Fatal(err)
	}
	return token, k
}

// fakeClock is the authenticator's clock in these tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func withClock(a *Authenticator) *fakeClock {
	c := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a.now = c.Now
	return c
}

// call sends one request with token from addr through Require; inside runs in the handler.
func call(a *Authenticator, token, addr string, inside func(c echo.Context) error) error {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.RemoteAddr = addr + ":40000"
	if inside == nil {
		inside = func(echo.Context) error { return nil }
	}
	return a.Require()(inside)(echo.New().NewContext(req, httptest.NewRecorder()))
}

// TestRevokedKeyWorksAtMostTheCacheTTL pins the documented bound: a replica that admitted a
// key keeps admitting it for the cache TTL after revocation, and not longer.
func TestRevokedKeyWorksAtMostTheCacheTTL(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	token, k := newKey(t, store, "cache", RoleAdmin)
	a := NewAuthenticator(store)
	clock := withClock(a)
	if err := call(a, token, "192.0.2.1", nil); err != nil {
		t.Fatal(err)
	}
	if err := store.RevokeKey(context.Background(), k.KeyID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultKeyCacheTTL - time.Millisecond)
	if err := call(a, token, "192.0.2.1", nil); err != nil {
		t.Fatalf("within the cache TTL the cached key was refused: %v", err)
	}
	clock.Advance(2 * time.Millisecond)
	if err := call(a, token, "192.0.2.1", nil); !apperr.Is(err, api.CodeUnauthorized) {
		t.Fatalf("past the cache TTL the revoked key got %v, want unauthorized", err)
	}
	if DefaultKeyCacheTTL > 10*time.Second {
		t.Fatalf("DefaultKeyCacheTTL %s: README and the authenticator promise a few seconds", DefaultKeyCacheTTL)
	}
}

// TestKeyCacheTTLZeroReadsEveryRequest: with the cache off a revocation takes effect on the
// next request, with no time passing at all; a good key still works on every request.
func TestKeyCacheTTLZeroReadsEveryRequest(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	token, k := newKey(t, store, "nocache", RoleAdmin)
	a := NewAuthenticator(store)
	a.SetKeyCacheTTL(0)
	withClock(a) // frozen: nothing expires by the clock
	for i := range 3 {
		if err := call(a, token, "192.0.2.1", nil); err != nil {
			t.Fatalf("request %d with a good key: %v", i, err)
		}
	}
	if err := store.RevokeKey(context.Background(), k.KeyID); err != nil {
		t.Fatal(err)
	}
	if err := call(a, token, "192.0.2.1", nil); !apperr.Is(err, api.CodeUnauthorized) {
		t.Fatalf("the request after the revocation got %v, want unauthorized at once", err)
	}
}

// TestFailedAuthenticationsAreLimitedPerAddress: an address that spent its budget of failed
// authentications gets 429 with Retry-After for anything but a key whose id exists until the
// budget refills; other addresses are unaffected, and good keys keep working from it.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	known, _ := newKey(t, store, "addr", RoleRuntime)
	fresh, _ := newKey(t, store, "addr", RoleRuntime)
	a := NewAuthenticator(store)
	a.SetLimits(admission.Limits{AuthFailures: 3, AuthFailureWindow: 3 * time.Second})
	clock := withClock(a)
	const attacker, neighbour = "198.51.100.7", "203.0.113.9"
	bad := "ldg_ffffffffffffffff_nope"

	if err := call(a, known, attacker, nil); err != nil {
		t.Fatalf("a good key before any failure: %v", err)
	}
	for i := range 3 {
		if err := call(a, bad, attacker, nil); !apperr.Is(err, api.CodeUnauthorized) {
			t.Fatalf("failure %d within the budget: %v, want unauthorized", i+1, err)
		}
	}
	wantLimited := func(what, token string) {
		t.Helper()
		err := call(a, token, attacker, nil)
		e, ok := apperr.As(err)
		if !ok || e.Code != api.CodeRateLimited || e.RetryAfter < time.Second {
			t.Fatalf("%s past the budget: %v, want rate_limited with a Retry-After of at least 1s", what, err)
		}
	}
	wantLimited("a bad key", bad)
	wantLimited("a missing key", "")
	wantLimited("a malformed key", "nope")
	wantLimited("another unknown key id", "ldg_eeeeeeeeeeeeeeee_nope")
	if err := call(a, fresh, attacker, nil); err != nil {
		t.Fatalf("a good key never admitted here, from the limited address: %v", err)
	}

	// The key admitted before still works, cached and once its cache entry has expired.
	if err := call(a, known, attacker, nil); err != nil {
		t.Fatalf("a key admitted before, from the limited address: %v", err)
	}
	clock.Advance(DefaultKeyCacheTTL + time.Millisecond)
	// Past the cache TTL the budget has refilled too (3 per 3s): spend it again first.
	for range 3 {
		_ = call(a, bad, attacker, nil)
	}
	wantLimited("a bad key", bad)
	if err := call(a, known, attacker, nil); err != nil {
		t.Fatalf("a key admitted before, read again from the limited address: %v", err)
	}
	// Another address has its own budget.
	if err := call(a, fresh, neighbour, nil); err != nil {
		t.Fatalf("a good key from another address: %v", err)
	}
	if err := call(a, bad, neighbour, nil); !apperr.Is(err, api.CodeUnauthorized) {
		t.Fatalf("a bad key from another address: %v, want unauthorized", err)
	}
	// Once the window lets one failure back, a bad key from the address is read again.
	clock.Advance(time.Second + time.Millisecond)
	if err := call(a, bad, attacker, nil); !apperr.Is(err, api.CodeUnauthorized) {
		t.Fatalf("a bad key once the window passed: %v, want unauthorized", err)
	}
}

// TestAttackerCannotLockOutAValidKey is issue 17 item 3: bad keys from one address, then
// one every so often, must not keep the operator's valid keys out of that address, neither
// on the replica under attack nor on a new one started on the same database file (the
// restart, where no key was admitted before); and while the address is over its budget a
// stream of random key ids costs one read of the key ids per keyIDsRefresh, not one each.
func TestAttackerCannotLockOutAValidKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	open := func() *Store {
		db, err := sqldb.Open(ctx, sqldb.Config{DSN: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		mg, err := migrate.New(db)
		if err != nil {
			t.Fatal(err)
		}
		if err := mg.Up(); err != nil {
			t.Fatal(err)
		}
		mg.Close()
		return NewStore(db)
	}
	store := open()
	valid, validKey := newKey(t, store, "lockout", RoleAdmin)
	other, _ := newKey(t, store, "lockout", RoleRuntime)
	const shared = "198.51.100.20" // the attacker and the operator behind one NAT
	limits := admission.Limits{AuthFailures: 25, AuthFailureWindow: 50 * time.Second}

	attack := func(a *Authenticator, clock *fakeClock) {
		t.Helper()
		for i := range 40 {
			_ = call(a, fmt.Sprintf("ldg_%016x_guess", i), shared, nil)
			_ = call(a, "garbage", shared, nil)
		}
		// The same key id with guessed secrets: its own budget at this address.
		for range 40 {
			_ = call(a, "ldg_"+validKey.KeyID+"_guess", shared, nil)
		}
		if err := call(a, "ldg_ffffffffffffffff_guess", shared, nil); !apperr.Is(err, api.CodeRateLimited) {
			t.Fatalf("past the budget an unknown key id got %v, want rate_limited", err)
		}
		clock.Advance(2 * time.Second) // one every 2 s keeps it spent
		_ = call(a, "ldg_ffffffffffffffff_guess", shared, nil)
	}
	check := func(when string, a *Authenticator) {
		t.Helper()
		for _, k := range []string{valid, other} {
			if err := call(a, k, shared, nil); err != nil {
				t.Fatalf("%s: a valid key from the attacked address got %v", when, err)
			}
		}
		if p, err := a.Check(ctx, shared, valid); err != nil || p.KeyID != validKey.KeyID {
			t.Fatalf("%s: console sign-in with a valid key got %v", when, err)
		}
		err := call(a, "ldg_"+validKey.KeyID+"_guess", shared, nil)
		if e, ok := apperr.As(err); !ok || e.Code != api.CodeRateLimited || e.RetryAfter < time.Second {
			t.Fatalf("%s: a wrong secret past its id's budget got %v, want rate_limited", when, err)
		}
	}

	a := NewAuthenticator(store)
	a.SetLimits(limits)
	clock := withClock(a)
	attack(a, clock)
	check("under attack", a)

	// The restart: a new replica on the same file, attacked before any key was admitted.
	restarted := open()
	b := NewAuthenticator(restarted)
	b.SetLimits(limits)
	clock = withClock(b)
	attack(b, clock)
	var statements atomic.Int32
	restarted.db.SetStatementHook(func(context.Context, *sqldb.Tx, sqldb.Statement) error {
		statements.Add(1)
		return nil
	})
	for i := range 200 {
		if err := call(b, fmt.Sprintf("ldg_%016x_again", 1000+i), shared, nil); !apperr.Is(err, api.CodeRateLimited) {
			t.Fatalf("a random key id past the budget got %v", err)
		}
	}
	restarted.db.SetStatementHook(nil)
	if n := statements.Load(); n > 1 {
		t.Fatalf("%d statements for 200 random key ids within %s, want at most 1 (one read of the ids)", n, keyIDsRefresh)
	}
	check("after a restart", b)
	// A key created after the last read of the ids works once keyIDsRefresh has passed.
	late, _ := newKey(t, restarted, "lockout", RoleRuntime)
	clock.Advance(keyIDsRefresh)
	if err := call(b, late, shared, nil); err != nil {
		t.Fatalf("a key created during the attack: %v", err)
	}
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"192.0.2.1", "192.0.2.1"},
		{"::ffff:192.0.2.1", "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"not-an-ip", "not-an-ip"},
	} {
		if got := clientAddress(c.in); got != c.want {
			t.Errorf("clientAddress(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestConcurrentColdKeyReadsOnce: requests with one key the cache has not seen share one
// database read while it runs, and all get its answer.
func TestConcurrentColdKeyReadsOnce(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	token, k := newKey(t, store, "cold", RoleRuntime)
	a := NewAuthenticator(store)
	var reads atomic.Int32
	gate := make(chan struct{})
	h := sha256.Sum256([]byte(token))
	read := func(ctx context.Context) (Principal, error) {
		reads.Add(1)
		<-gate
		return store.Authenticate(ctx, token)
	}
	const n = 16
	type result struct {
		p   Principal
		err error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			p, err := a.keys.load(context.Background(), h, a.now, read)
			results <- result{p, err}
		}()
	}
	// Hold the one read until every other request waits for it.
	for {
		a.keys.mu.Lock()
		f := a.keys.flights[h]
		waiting := f != nil && f.waiters == n-1
		a.keys.mu.Unlock()
		if waiting {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	for range n {
		r := <-results
		if r.err != nil || r.p.KeyID != k.KeyID {
			t.Fatalf("a waiting request got %+v, %v", r.p, r.err)
		}
	}
	if got := reads.Load(); got != 1 {
		t.Fatalf("%d database reads for %d concurrent requests, want 1", got, n)
	}
	if _, fresh := a.keys.get(h, a.now()); !fresh {
		t.Fatal("the key read is not cached")
	}
}
