package tenancy

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/ledger-dev/ledger/internal/apperr"
)

// cacheTTL bounds how long a revoked key keeps working on a replica that saw it recently.
const cacheTTL = 5 * time.Second

const cacheMax = 10000

// Authenticator checks bearer keys, remembering good ones briefly so that a busy runtime
// does not cost a key lookup per request.
type Authenticator struct {
	store *Store
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]cached

	// Per-tenant request budgets (nil: no limit).
	rate     rate.Limit
	burst    int
	limitMu  sync.Mutex
	limiters map[string]*rate.Limiter
}

// SetRateLimit limits each tenant to rps requests per second with bursts of burst; a
// request past it is answered 429 rate_limited with Retry-After. rps <= 0 turns it off.
func (a *Authenticator) SetRateLimit(rps float64, burst int) {
	a.limitMu.Lock()
	defer a.limitMu.Unlock()
	if rps <= 0 {
		a.rate, a.limiters = 0, nil
		return
	}
	if burst < 1 {
		burst = int(rps)
	}
	a.rate, a.burst, a.limiters = rate.Limit(rps), max(burst, 1), map[string]*rate.Limiter{}
}

// admit spends one request of the tenant's budget, or says how long until one is free.
func (a *Authenticator) admit(tenantID string) (bool, time.Duration) {
	a.limitMu.Lock()
	if a.limiters == nil {
		a.limitMu.Unlock()
		return true, 0
	}
	l, ok := a.limiters[tenantID]
	if !ok {
		l = rate.NewLimiter(a.rate, a.burst)
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

type cached struct {
	p       Principal
	expires time.Time
}

// NewAuthenticator returns an authenticator over store.
func NewAuthenticator(store *Store) *Authenticator {
	return &Authenticator{store: store, ttl: cacheTTL, now: time.Now, cache: map[[32]byte]cached{}}
}

// Require returns middleware admitting requests whose key has one of roles (any role when
// none is given): 401 without a good key, 403 with the wrong role.
func (a *Authenticator) Require(roles ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			auth := c.Request().Header.Get(echo.HeaderAuthorization)
			scheme, token, ok := strings.Cut(auth, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="ledger"`)
				return errBadKey
			}
			p, err := a.Check(c.Request().Context(), strings.TrimSpace(token))
			if err != nil {
				if apperr.Is(err, apperr.Unauthorized) {
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="ledger"`)
				}
				return err
			}
			if ok, wait := a.admit(p.TenantID); !ok {
				return &apperr.Error{Code: apperr.RateLimited, Detail: "the tenant's request rate is over its limit", RetryAfter: wait}
			}
			if len(roles) > 0 && !hasRole(roles, p.Role) {
				return apperr.New(apperr.Forbidden, "this route needs the %s role", strings.Join(roles, " or "))
			}
			c.SetRequest(c.Request().WithContext(WithPrincipal(c.Request().Context(), p)))
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

// Check resolves a key to its principal, as Require does for a bearer key: the admin
// console signs in through it, so a key is checked one way everywhere.
func (a *Authenticator) Check(ctx context.Context, token string) (Principal, error) {
	h := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.Lock()
	e, ok := a.cache[h]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.p, nil
	}
	p, err := a.store.Authenticate(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	a.mu.Lock()
	if len(a.cache) >= cacheMax {
		clear(a.cache)
	}
	a.cache[h] = cached{p: p, expires: now.Add(a.ttl)}
	a.mu.Unlock()
	return p, nil
}

// MustPrincipal returns the principal of a request behind Require.
func MustPrincipal(c echo.Context) Principal {
	p, ok := From(c.Request().Context())
	if !ok {
		panic("tenancy: handler reached without an authenticated principal")
	}
	return p
}
