package tenancy

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// Authenticator checks bearer keys, remembering good ones briefly so that a busy runtime
// does not cost a key lookup per request, and applies the Limits of the request's tenant and
// client address.
type Authenticator struct {
	store *Store
	now   func() time.Time
	keys  *keyCache
	ids   *keyIDs

	admission *admission.Controller
	failures  *addrBudget
}

// NewAuthenticator returns an authenticator over store that caches keys for
// DefaultKeyCacheTTL and applies no limits until SetLimits.
func NewAuthenticator(store *Store) *Authenticator {
	a := &Authenticator{store: store, now: time.Now, keys: newKeyCache(DefaultKeyCacheTTL), ids: newKeyIDs()}
	a.SetLimits(admission.Limits{})
	return a
}

// SetKeyCacheTTL sets how long a key read from the database is trusted without reading it
// again (0: every request reads its key). A revoked key keeps working on this replica for at
// most that long after it was last read. Call it while wiring, before serving.
func (a *Authenticator) SetKeyCacheTTL(ttl time.Duration) { a.keys = newKeyCache(ttl) }

// SetLimits sets the per-tenant and per-address limits. Call it while wiring, before
// serving.
func (a *Authenticator) SetLimits(l admission.Limits) {
	a.admission = admission.New(l)
	a.failures = newAddrBudget(l.AuthFailures, l.AuthFailureWindow)
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
			return a.serve(c, p, next)
		}
	}
}

// Admit applies to a request whose principal is already in its context (the admin
// console's session, tenancy.WithPrincipal) the admission Require applies after the key:
// the tenant's rate and in-flight limits, the replica's in-flight cap and its active-request
// gate (--max-active), the heavy-read slots and the read deadline. A request without a
// principal is refused as unauthenticated.
func (a *Authenticator) Admit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, ok := From(c.Request().Context())
		if !ok {
			return apperr.New(api.CodeUnauthorized, "not signed in")
		}
		return a.serve(c, p, next)
	}
}

// serve admits p's request and runs next with p in its context.
func (a *Authenticator) serve(c echo.Context, p Principal, next echo.HandlerFunc) error {
	return a.admission.Serve(c, p.TenantID, func(c echo.Context) error {
		c.SetRequest(c.Request().WithContext(WithPrincipal(c.Request().Context(), p)))
		return next(c)
	})
}

func hasRole(roles []string, r string) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// authenticate resolves the request's bearer key (resolve).
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

// resolve checks a key presented from addr (ok false: none was). A key read less than the
// cache TTL ago costs nothing. A key whose id exists is always checked, with one indexed
// read, whatever its address did: its failures are counted against the address and that
// key id together, and past that budget a wrong secret is 429 instead of 401. Everything
// else (no key, a malformed one, an id that does not exist) spends the address's own
// budget, and past it is refused without reading the database.
func (a *Authenticator) resolve(ctx context.Context, addr, token string, ok bool) (Principal, error) {
	var h [32]byte
	if ok {
		h = sha256.Sum256([]byte(token))
		if p, fresh := a.keys.get(h, a.now()); fresh {
			return p, nil
		}
	}
	id := ""
	if ok {
		id = keyIDOf(token)
	}
	if id == "" || !a.ids.has(id) {
		if wait := a.failures.spent(addr, a.now()); wait > 0 {
			if id == "" {
				return Principal{}, errAuthFailures(wait)
			}
			// Over budget, an id not known here: whether it exists is read with every live
			// id, at most once per keyIDsRefresh, not with one read per presented id.
			a.ids.refresh(ctx, a.now, a.store.liveKeyIDs)
			if !a.ids.has(id) {
				return Principal{}, errAuthFailures(max(wait, keyIDsRefresh))
			}
		}
	}
	if id == "" {
		return Principal{}, a.failed(addr)
	}
	p, err := a.keys.load(ctx, h, a.now, func(ctx context.Context) (Principal, error) {
		p, found, err := a.store.authenticate(ctx, token)
		if err != nil && found {
			// Carried in the error, which requests sharing this read all get.
			err = errors.Join(err, errIDExists)
		}
		return p, err
	})
	exists := errors.Is(err, errIDExists)
	switch {
	case err == nil:
		a.ids.add(id)
		return p, nil
	case !apperr.Is(err, api.CodeUnauthorized):
		return p, err
	case exists:
		// A wrong secret (or a revoked key) for an id that exists: the id's own budget at
		// this address, which never keeps the right secret out.
		pair := addr + " " + id
		a.failures.fail(pair, a.now())
		if wait := a.failures.spent(pair, a.now()); wait > 0 {
			return Principal{}, errAuthFailures(wait)
		}
		return Principal{}, errBadKey
	}
	return Principal{}, a.failed(addr)
}

// errIDExists marks a refused key whose id exists.
var errIDExists = errors.New("the key id exists")

// SessionAllowed reports whether a console session cookie from addr (the request's IP) that
// was not good on this replica before may be looked up: nil, or 429 rate_limited when the
// address has spent its failed-authentication budget. Bad cookies spend that budget
// (SessionFailed) exactly as bad keys do, so random cookies cannot cost a database read each.
func (a *Authenticator) SessionAllowed(addr string) error {
	if wait := a.failures.spent(clientAddress(addr), a.now()); wait > 0 {
		return errAuthFailures(wait)
	}
	return nil
}

// SessionFailed spends one failure of addr's budget for a cookie that named no session.
func (a *Authenticator) SessionFailed(addr string) { a.failures.fail(clientAddress(addr), a.now()) }

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
