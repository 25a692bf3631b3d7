package tenancy

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Authenticator checks bearer keys, remembering good ones briefly so that a busy runtime
// does not cost a key lookup per request, and applies the Limits of the request's tenant and
// client address.
type Authenticator struct {
	store *Store
	now   func() time.Time
	keys  *keyCache

	limits   Limits
	inFlight *counter // per tenant
	polls    *counter // per tenant
	waits    *counter // per tenant
	replica  *counter // all tenants, under one key
	work     *gate
	failures *addrBudget

	limitMu  sync.Mutex
	limiters map[string]*rate.Limiter // per tenant; nil: no rate limit
}

// NewAuthenticator returns an authenticator over store that caches keys for
// DefaultKeyCacheTTL and applies no limits until SetLimits.
func NewAuthenticator(store *Store) *Authenticator {
	a := &Authenticator{store: store, now: time.Now, keys: newKeyCache(DefaultKeyCacheTTL)}
	a.SetLimits(Limits{})
	return a
}

// SetKeyCacheTTL sets how long a key read from the database is trusted without reading it
// again (0: every request reads its key). A revoked key keeps working on this replica for at
// most that long after it was last read. Call it while wiring, before serving.
func (a *Authenticator) SetKeyCacheTTL(ttl time.Duration) { a.keys = newKeyCache(ttl) }

// SetLimits sets the per-tenant and per-address limits. Call it while wiring, before
// serving.
func (a *Authenticator) SetLimits(l Limits) {
	a.limits = l
	a.inFlight, a.polls, a.replica = newCounter(l.InFlight), newCounter(l.LongPolls), newCounter(l.ReplicaInFlight)
	// Reads that wait (waitSeconds) have slots of their own, as many: a runtime waiting on
	// its decisions must not take the slots its claims wait for work in.
	a.waits = newCounter(l.LongPolls)
	a.work = newGate(l.ReplicaActive)
	a.failures = newAddrBudget(l.AuthFailures, l.AuthFailureWindow)
	a.limiters = nil
	if l.Rate > 0 {
		a.limiters = map[string]*rate.Limiter{}
	}
}

// admit spends one request of the tenant's rate, or says how long until one is free.
func (a *Authenticator) admit(tenantID string) (bool, time.Duration) {
	if a.limiters == nil {
		return true, 0
	}
	a.limitMu.Lock()
	l, ok := a.limiters[tenantID]
	if !ok {
		burst := a.limits.Burst
		if burst < 1 {
			burst = max(int(a.limits.Rate), 1)
		}
		l = rate.NewLimiter(rate.Limit(a.limits.Rate), burst)
		a.limiters[tenantID] = l
	}
	a.limitMu.Unlock()
	r := l.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}

// Require returns middleware admitting requests whose key has one of roles (any role when
// none is given): 401 without a good key, 403 with the wrong role, 429 rate_limited past a
// limit. In order: the key (failed authentications spend the client address's budget), the
// role, the tenant's rate, one of the tenant's slots in flight, one of the replica's, then
// the tenant's turn to be worked on; all are held until the handler returns, except the
// turn, given up on SQLite when the request's write waits for the single writer. Nothing is
// taken before the request is known to be the tenant's, and a request refused at a step
// holds nothing of the steps before.
func (a *Authenticator) Require(roles ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := a.authenticate(c)
			if err != nil {
				if apperr.Is(err, api.CodeUnauthorized) {
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="ledger"`)
				}
				return err
			}
			if len(roles) > 0 && !hasRole(roles, p.Role) {
				return apperr.New(api.CodeForbidden, "this route needs the %s role", strings.Join(roles, " or "))
			}
			if ok, wait := a.admit(p.TenantID); !ok {
				return &apperr.Error{Code: api.CodeRateLimited, Detail: "the tenant's request rate is over its limit", RetryAfter: wait}
			}
			if !a.inFlight.take(p.TenantID) {
				return errTenantInFlight()
			}
			defer a.inFlight.give(p.TenantID)
			if !a.replica.take("") {
				return errReplicaInFlight()
			}
			defer a.replica.give("")
			ctx := c.Request().Context()
			leave, err := a.work.enter(ctx, p.TenantID)
			if err != nil {
				return err // the client went away while waiting
			}
			defer leave()
			ctx = WithPrincipal(ctx, p)
			ctx = context.WithValue(ctx, ticketKey{}, ticket{polls: a.polls, waits: a.waits, tenant: p.TenantID, leave: leave})
			// On SQLite a write gives the place up as it goes to wait for the single writer,
			// whose group commit shares it between tenants from there: a place held through
			// that wait would cap how many writes share one commit.
			ctx = sqldb.OnWriteWait(ctx, leave)
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

func hasRole(roles []string, r string) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// authenticate resolves the request's bearer key. A key read less than the cache TTL ago
// costs nothing; any other costs a database read, which a client address over its
// failed-authentication budget is refused, unless the key is one this replica admitted
// before. Every 401 spends one failure of the address's budget.
func (a *Authenticator) authenticate(c echo.Context) (Principal, error) {
	token, ok := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
	return a.resolve(c.Request().Context(), clientAddress(realIP(c)), token, ok)
}

// Check resolves a key presented other than in a bearer header (the admin console's
// sign-in form) exactly as Require does: the same cache and the same budget of failures
// per client address (addr as the request's IP), so a key is checked one way everywhere.
func (a *Authenticator) Check(ctx context.Context, addr, token string) (Principal, error) {
	token = strings.TrimSpace(token)
	return a.resolve(ctx, clientAddress(addr), token, token != "")
}

func (a *Authenticator) resolve(ctx context.Context, addr, token string, ok bool) (Principal, error) {
	var (
		h            [32]byte
		p            Principal
		fresh, known bool
	)
	if ok {
		h = sha256.Sum256([]byte(token))
		if p, fresh, known = a.keys.get(h, a.now()); fresh {
			return p, nil
		}
	}
	if !known {
		if wait := a.failures.spent(addr, a.now()); wait > 0 {
			return Principal{}, errAuthFailures(wait)
		}
	}
	if !ok {
		return Principal{}, a.failed(addr)
	}
	p, err := a.keys.load(ctx, h, a.now, func(ctx context.Context) (Principal, error) {
		return a.store.Authenticate(ctx, token)
	})
	if apperr.Is(err, api.CodeUnauthorized) {
		return Principal{}, a.failed(addr)
	}
	return p, err
}

// realIP is the client's address as the server's IP extractor sees it. Without one, Echo
// would believe any client's X-Forwarded-For: then the TCP peer is the client.
func realIP(c echo.Context) string {
	if e := c.Echo(); e != nil && e.IPExtractor != nil {
		return c.RealIP()
	}
	return echo.ExtractIPDirect()(c.Request())
}

// failed spends one failure of addr's budget and returns the answer to a bad key.
func (a *Authenticator) failed(addr string) error {
	a.failures.fail(addr, a.now())
	return errBadKey
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// MustPrincipal returns the principal of a request behind Require.
func MustPrincipal(c echo.Context) Principal {
	p, ok := From(c.Request().Context())
	if !ok {
		panic("tenancy: handler reached without an authenticated principal")
	}
	return p
}
