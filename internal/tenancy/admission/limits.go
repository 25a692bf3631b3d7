// Package admission decides what each tenant's requests may take of a replica (DESIGN.md
// section 6): a rate, slots in flight, long-poll and heavy-read slots, a turn among the
// tenants' requests to be worked on, and the read deadline. A request is admitted for the
// tenant its key authenticated (package tenancy) before it takes anything.
package admission

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Limits bounds what one tenant, or one client address, may take of a replica, and what
// all tenants together may, so that one tenant's load never makes another tenant's
// requests fail (DESIGN.md section 6). A zero field is no limit.
//
// A request is attributed to its tenant by its key before it takes anything: a request
// refused here has held nothing. Then, in order: the tenant's rate, the tenant's requests
// in flight, the replica's requests in flight (which one tenant's share cannot fill: the
// server refuses a tenant share at or above it), and a turn among the tenants' requests
// to be worked on.
type Limits struct {
	// Rate and Burst bound each tenant's requests per second.
	Rate  float64
	Burst int
	// InFlight caps each tenant's requests being served at once (waiting for their turn
	// included); past it a request is 429 rate_limited with Retry-After. A waiting
	// long-poll claim counts.
	InFlight int
	// LongPolls caps each tenant's claims waiting for work at once; past it a claim does not
	// wait (HoldLongPoll reports false) and answers 204 with Retry-After at once. It caps
	// the tenant's waiting reads (GET with waitSeconds, HoldWait) apart, by as many.
	LongPolls int
	// AuthFailures failed authentications are allowed per AuthFailureWindow from one client
	// address (a token bucket: AuthFailures at once, refilled evenly over the window). Past
	// it, a request from that address with no key, a malformed one or one whose id does not
	// exist is 429 rate_limited with Retry-After, without reading the database; a key whose
	// id exists is always checked, its wrong secrets counted per address and key id.
	AuthFailures      int
	AuthFailureWindow time.Duration
	// ReplicaInFlight caps the requests of all tenants together being served at once; past
	// it a request is 429 rate_limited with Retry-After. It protects the process.
	ReplicaInFlight int
	// ReplicaActive is how many requests the replica works on at once; the others wait,
	// and the tenants with requests waiting are served in turn, one request each. On SQLite
	// a request gives its place up when its write goes to wait for the single writer (the
	// group commit serves tenants in turn from there), and a claim waiting for work gives
	// it up while it waits.
	ReplicaActive int
	// HeavyReads caps each tenant's heavy reads (insights: HeavyRead) being served at once;
	// past it a heavy read is 429 rate_limited with Retry-After, so one tenant's aggregate
	// questions never hold the read connections every tenant shares.
	HeavyReads int
	// HeavyReadTimeout is a heavy read's deadline (0: ReadTimeout's): past it its statement
	// is cancelled and the request answers 503 database_unavailable with Retry-After.
	HeavyReadTimeout time.Duration
	// ReadTimeout is the deadline of every GET (0: none): a statement still running when it
	// passes, or when the client goes away, is cancelled, so no read computes for nobody.
	// It must exceed the longest wait a read may ask for (waitSeconds, 30 s).
	ReadTimeout time.Duration
}

// Controller admits requests by Limits. Its zero Limits admit everything.
type Controller struct {
	limits   Limits
	inFlight *counter // per tenant
	polls    *counter // per tenant
	waits    *counter // per tenant
	heavy    *counter // per tenant
	replica  *counter // all tenants, under one key
	work     *gate

	limitMu  sync.Mutex
	limiters map[string]*rate.Limiter // per tenant; nil: no rate limit
}

// New returns a controller applying l.
func New(l Limits) *Controller {
	c := &Controller{limits: l, inFlight: newCounter(l.InFlight), polls: newCounter(l.LongPolls), replica: newCounter(l.ReplicaInFlight),
		// Reads that wait (waitSeconds) have slots of their own, as many: a runtime waiting on
		// its decisions must not take the slots its claims wait for work in.
		waits: newCounter(l.LongPolls), heavy: newCounter(l.HeavyReads), work: newGate(l.ReplicaActive)}
	if l.Rate > 0 {
		c.limiters = map[string]*rate.Limiter{}
	}
	return c
}

// admit spends one request of the tenant's rate, or says how long until one is free.
func (c *Controller) admit(tenantID string) (bool, time.Duration) {
	if c.limiters == nil {
		return true, 0
	}
	c.limitMu.Lock()
	l, ok := c.limiters[tenantID]
	if !ok {
		burst := c.limits.Burst
		if burst < 1 {
			burst = max(int(c.limits.Rate), 1)
		}
		l = rate.NewLimiter(rate.Limit(c.limits.Rate), burst)
		c.limiters[tenantID] = l
	}
	c.limitMu.Unlock()
	r := l.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}

// Serve admits a request of tenant and runs next with the admission's ticket in its
// context, holding what it took until next returns. A request refused at a step holds
// nothing of the steps before: 429 rate_limited past the tenant's rate or a cap in flight.
func (c *Controller) Serve(ec echo.Context, tenant string, next echo.HandlerFunc) error {
	if ok, wait := c.admit(tenant); !ok {
		return &apperr.Error{Code: api.CodeRateLimited, Detail: "the tenant's request rate is over its limit", RetryAfter: wait}
	}
	if !c.inFlight.take(tenant) {
		return errTenantInFlight()
	}
	defer c.inFlight.give(tenant)
	if !c.replica.take("") {
		return errReplicaInFlight()
	}
	defer c.replica.give("")
	ctx := ec.Request().Context()
	leave, err := c.work.enter(ctx, tenant)
	if err != nil {
		return err // the client went away while waiting
	}
	defer leave()
	heavyTimeout := c.limits.HeavyReadTimeout
	if heavyTimeout <= 0 {
		heavyTimeout = c.limits.ReadTimeout
	}
	ctx = context.WithValue(ctx, ticketKey{}, ticket{polls: c.polls, waits: c.waits, heavy: c.heavy,
		heavyTimeout: heavyTimeout, tenant: tenant, leave: leave})
	// On SQLite a write gives the place up as it goes to wait for the single writer,
	// whose group commit shares it between tenants from there: a place held through
	// that wait would cap how many writes share one commit.
	ctx = sqldb.OnWriteWait(ctx, leave)
	if c.limits.ReadTimeout > 0 && (ec.Request().Method == http.MethodGet || ec.Request().Method == http.MethodHead) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.limits.ReadTimeout)
		defer cancel()
	}
	ec.SetRequest(ec.Request().WithContext(ctx))
	return deadlineProblem(ctx, next(ec))
}

// Retry-After values of the limits whose wait cannot be computed: a slot is free when
// another request of the tenant ends.
const (
	inFlightRetryAfter = time.Second
	// LongPollRetryAfter is the Retry-After of a claim that was refused a long-poll slot.
	LongPollRetryAfter = time.Second
)

// counter counts what each key holds, up to max each. The zero max is no limit. Keys holding
// nothing are dropped, so the map is as large as the number of busy tenants.
type counter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newCounter(max int) *counter { return &counter{max: max, n: map[string]int{}} }

// take takes one for key, or reports false when key holds max already.
func (c *counter) take(key string) bool {
	if c.max <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= c.max {
		return false
	}
	c.n[key]++
	return true
}

// give gives back one that take took for key.
func (c *counter) give(key string) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] <= 1 {
		delete(c.n, key)
		return
	}
	c.n[key]--
}

// held is what key holds now.
func (c *counter) held(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

type ticketKey struct{}

// ticket is what a request admitted by Require carries in its context: its tenant's
// long-poll slots, and the way to give its place among the requests being worked on up.
type ticket struct {
	polls *counter
	waits *counter
	heavy *counter
	// heavyTimeout is a heavy read's deadline (0: none of its own).
	heavyTimeout time.Duration
	tenant       string
	leave        func()
}

// HoldLongPoll takes one of the request's tenant's long-poll slots for a claim about to wait
// for work. It reports false when the tenant has as many claims waiting as it may: the claim
// must then answer at once, without waiting (204 with Retry-After LongPollRetryAfter).
// Holding a slot, the request gives up its place among the requests being worked on (a
// claim that waits does its few statements when woken without one). release gives the slot
// back; it must be called once the claim stops waiting. A context that did not pass the
// authenticator has no limit.
func HoldLongPoll(ctx context.Context) (release func(), ok bool) {
	return hold(ctx, func(t ticket) *counter { return t.polls })
}

// HoldWait is HoldLongPoll for a read asking to wait up to d for a change (a GET with
// waitSeconds): the tenant's waiting reads have as many slots as its claims, apart from
// them. It returns how long the read may wait: d while it holds a slot, which release gives
// back, and 0 (answer at once with the current state) when none is free or d is 0.
func HoldWait(ctx context.Context, d time.Duration) (wait time.Duration, release func()) {
	if d <= 0 {
		return 0, func() {}
	}
	release, ok := hold(ctx, func(t ticket) *counter { return t.waits })
	if !ok {
		return 0, func() {}
	}
	return d, release
}

// heavyRetryAfter is the Retry-After of a heavy read refused its slot or past its deadline.
const heavyRetryAfter = 2 * time.Second

// HeavyRead runs read, a read whose cost grows with the window or page it asks for
// (insights), in one of the request's tenant's heavy-read slots and under the heavy-read
// deadline. No slot free: 429 rate_limited with Retry-After, read not run. Past the
// deadline: read's statements are cancelled (the context goes through every query) and the
// answer is 503 database_unavailable with Retry-After. A context that did not pass the
// authenticator has neither limit.
func HeavyRead(ctx context.Context, read func(ctx context.Context) error) error {
	t, found := ctx.Value(ticketKey{}).(ticket)
	if !found {
		return read(ctx)
	}
	if !t.heavy.take(t.tenant) {
		return &apperr.Error{Code: api.CodeRateLimited, RetryAfter: heavyRetryAfter,
			Detail: "the tenant is at its limit of heavy reads (insights) in flight; retry later"}
	}
	defer t.heavy.give(t.tenant)
	if t.heavyTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.heavyTimeout)
		defer cancel()
	}
	return deadlineProblem(ctx, read(ctx))
}

// deadlineProblem turns err into 503 database_unavailable when it comes from ctx's own
// deadline having passed (not from the client going away).
func deadlineProblem(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &apperr.Error{Code: api.CodeDatabaseUnavailable, RetryAfter: heavyRetryAfter,
			Detail: "the read did not finish within its deadline and was cancelled; narrow it or retry later"}
	}
	return err
}

func hold(ctx context.Context, slots func(ticket) *counter) (release func(), ok bool) {
	t, found := ctx.Value(ticketKey{}).(ticket)
	if !found {
		return func() {}, true
	}
	c := slots(t)
	if !c.take(t.tenant) {
		return nil, false
	}
	t.leave()
	var once sync.Once
	return func() { once.Do(func() { c.give(t.tenant) }) }, true
}

func errReplicaInFlight() error {
	return &apperr.Error{Code: api.CodeRateLimited, RetryAfter: inFlightRetryAfter,
		Detail: "the server is at its limit of requests in flight; retry later"}
}

func errTenantInFlight() error {
	return &apperr.Error{Code: api.CodeRateLimited, RetryAfter: inFlightRetryAfter,
		Detail: "the tenant is at its limit of requests in flight; retry later"}
}
