// Package console is the admin console at /ui/ (DESIGN.md section 6): server-rendered
// pages (html/template) embedded in the binary, which read without JavaScript and use
// htmx, when it runs, only to refresh the overview in place. An admin signs in with an
// admin key; the console then calls the same services as the API with the key's tenant,
// so it shows exactly what that tenant may see.
package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/operations"
	"github.com/ledger-dev/ledger/internal/overview"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/schedules"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Secure-cookie modes (--console-secure-cookies).
const (
	SecureAuto   = "auto"
	SecureAlways = "always"
	SecureNever  = "never"
)

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 8 * time.Hour

// Deps is what the console calls: the services the API calls.
type Deps struct {
	DB          *sqldb.DB
	Auth        *tenancy.Authenticator
	Runs        *runs.Service
	History     *history.Store
	Decisions   *decisions.Store
	Delegations *delegations.Store
	Releases    *releases.Store
	Projects    *projects.Store
	Overview    *overview.Store
	Insights    *insights.Store
	Calls       *calls.Store
	Schedules   *schedules.Store
	Operations  *operations.Store
	Webhooks    *webhooks.Store
	// Secure is SecureAuto (default), SecureAlways or SecureNever.
	Secure string
	// SessionTTL is how long a sign-in lasts (0: DefaultSessionTTL).
	SessionTTL time.Duration
	Logger     *slog.Logger
}

type console struct {
	Deps
	sessions *sessionStore
	pages    map[string]*template.Template
	// crossOrigin refuses a write a browser says comes from another origin (Sec-Fetch-Site,
	// else Origin against Host): a second fence besides the CSRF token.
	crossOrigin *http.CrossOriginProtection
}

const (
	cookieName   = "ledger_console"
	signinCookie = "ledger_console_signin"
	cookiePath   = "/ui/"
)

// Routes registers the console under /ui/ on e. Its routes are HTML pages, not API
// operations: they stay out of the OpenAPI document and answer HTML, never problem+json.
func Routes(e *echo.Echo, d Deps) {
	if d.Secure == "" {
		d.Secure = SecureAuto
	}
	if d.SessionTTL <= 0 {
		d.SessionTTL = DefaultSessionTTL
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	c := &console{Deps: d, sessions: &sessionStore{db: d.DB, q: queriesFor(d.DB.Dialect), ttl: d.SessionTTL},
		pages: parsePages(), crossOrigin: http.NewCrossOriginProtection()}
	static, _ := fs.Sub(staticFS, "static")
	e.GET("/ui", func(ctx echo.Context) error { return ctx.Redirect(http.StatusSeeOther, "/ui/") })
	g := e.Group("/ui", c.headers)
	g.GET("/static/*", c.staticFile(static))
	g.GET("/signin", c.signinPage)
	g.POST("/signin", c.signin)

	// Signed-in pages pass the API's admission (the tenant's rate and in-flight limits, the
	// replica's caps and --max-active, the read deadline) as the API's routes do.
	a := e.Group("/ui", c.headers, c.requireSession, d.Auth.Admit)
	a.POST("/signout", c.signout)
	a.GET("/", c.overviewPage)
	a.GET("/overview/live", c.overviewLive)
	a.GET("/runs", c.runsPage)
	a.GET("/insights", c.insightsPage)
	a.GET("/runs/:runId", c.runPage)
	a.POST("/runs/:runId/cancel", c.cancelRun)
	a.POST("/runs/:runId/continue", c.continueRun)
	a.POST("/runs/:runId/fork", c.forkRun)
	a.POST("/runs/bulk", c.bulkRuns)
	a.GET("/operations/:operationId", c.operationPage)
	a.GET("/attempts", c.attemptsPage)
	a.GET("/calls", c.callsPage)
	a.GET("/attempts/:attemptId", c.attemptPage)
	a.GET("/decisions", c.decisionsPage)
	a.GET("/decisions/:decisionId", c.decisionPage)
	a.POST("/decisions/:decisionId/answer", c.answerDecision)
	a.GET("/releases", c.releasesPage)
	a.GET("/releases/:releaseId/:adapterVersion/move", c.confirmReleaseMove)
	a.POST("/releases/:releaseId/:adapterVersion/move", c.moveRelease)
	a.GET("/projects", c.projectsPage)
	a.POST("/projects", c.createProject)
	a.POST("/projects/:projectId", c.changeProject)
	a.GET("/schedules", c.schedulesPage)
	a.POST("/schedules/:scheduleId", c.changeSchedule)
	a.GET("/webhooks", c.webhooksPage)
	a.POST("/webhook-deliveries/:deliveryId/redeliver", c.redeliver)
}

// staticFile serves the embedded files. A directory (the static root included) answers
// 404: a listing would only show what the binary holds, and a page is no place for it.
func (c *console) staticFile(root fs.FS) echo.HandlerFunc {
	files := http.FileServer(http.FS(root))
	return func(ctx echo.Context) error {
		name := strings.TrimPrefix(ctx.Request().URL.Path, "/ui/static/")
		if fi, err := fs.Stat(root, name); err != nil || fi.IsDir() || !fs.ValidPath(name) {
			return c.render(ctx, http.StatusNotFound, "error", page{Title: "Not found",
				Data: errorView{Message: "There is no such file."}})
		}
		// The files change only with the binary.
		ctx.Response().Header().Set("Cache-Control", "public, max-age=3600")
		http.StripPrefix("/ui/static/", files).ServeHTTP(ctx.Response(), ctx.Request())
		return nil
	}
}

// headers sets what every console answer carries: no caching of tenant data, no framing,
// and a policy that lets the pages run only their own files.
func (c *console) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		h := ctx.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(ctx.Path(), "/ui/static/") {
			h.Set("Cache-Control", "no-store")
		}
		if err := c.crossOrigin.Check(ctx.Request()); err != nil {
			return c.render(ctx, http.StatusForbidden, "error", page{Title: "Refused",
				Data: errorView{Message: "This form was sent from another site, so it was refused. Open the console itself and try again."}})
		}
		// Go drops the pairs of a query string it cannot parse (a ';', a bad '%' escape),
		// and with them a filter: a list would show more than was asked for. The API
		// answers 400 for the same address.
		if _, err := url.ParseQuery(ctx.Request().URL.RawQuery); err != nil {
			return c.render(ctx, http.StatusBadRequest, "error", page{Title: "Bad address",
				Data: errorView{Message: "This address has a query string that cannot be read (" + err.Error() + "), so nothing was shown. Fix the address and try again."}})
		}
		if err := next(ctx); err != nil && !ctx.Response().Committed {
			return c.errorPage(ctx, err)
		}
		return nil
	}
}

// errorPage answers a console request that failed with an error as a page, never with the
// API's problem+json: a database that is unavailable (during a sign-in as on any page),
// a refusal, or an internal error (logged).
func (c *console) errorPage(ctx echo.Context, err error) error {
	status := http.StatusInternalServerError
	title, msg := "Something went wrong", "The server could not answer this page; the cause is logged. Try again in a moment."
	e, coded := apperr.As(err)
	var he *echo.HTTPError
	switch {
	case errors.Is(err, sqldb.ErrUnavailable):
		status, title, msg = http.StatusServiceUnavailable, "Database unavailable",
			"The database is unavailable right now, so this could not be done. Try again in a few seconds."
		ctx.Response().Header().Set("Retry-After", "5")
	case coded && e.Code.Status() < 500:
		status, title, msg = e.Code.Status(), e.Code.Title(), e.Detail
		if e.RetryAfter > 0 { // a limit refused the page, as it refuses the API (429)
			web.SetRetryAfter(ctx.Response().Header(), e.RetryAfter)
		}
	case errors.As(err, &he) && he.Code < 500:
		status, title, msg = he.Code, http.StatusText(he.Code), http.StatusText(he.Code)+"."
	}
	if status >= 500 {
		c.Logger.ErrorContext(ctx.Request().Context(), "console request failed", "err", err,
			"method", ctx.Request().Method, "path", ctx.Path())
	}
	return c.render(ctx, status, "error", page{Title: title, Data: errorView{Message: msg}})
}

// secure reports whether cookies get the Secure attribute. In auto mode: when the request
// came over TLS, or a proxy says so with X-Forwarded-Proto. That header is trusted from
// anyone because it can only add Secure: a client that lies about it only keeps its own
// cookie from being sent over plain HTTP.
func (c *console) secure(r *http.Request) bool {
	switch c.Secure {
	case SecureAlways:
		return true
	case SecureNever:
		return false
	}
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (c *console) setCookie(ctx echo.Context, name, value string, maxAge int) {
	ctx.SetCookie(&http.Cookie{Name: name, Value: value, Path: cookiePath, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(ctx.Request())})
}

// requireSession admits a request with a live session (else to the sign-in page), puts the
// session's principal on the request (so the access log names the tenant and key), and
// refuses a POST whose form body lacks the session's CSRF token (never read from the query
// string, which ends up in logs, histories and Referer headers).
func (c *console) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		r := ctx.Request()
		ck, err := r.Cookie(cookieName)
		var s session
		if err == nil {
			s, err = c.lookupSession(ctx, ck.Value)
		}
		if err != nil {
			if !errors.Is(err, errNoSession) && !errors.Is(err, http.ErrNoCookie) {
				return err
			}
			if r.Method != http.MethodGet {
				return c.render(ctx, http.StatusUnauthorized, "error", page{Title: "Signed out",
					Data: errorView{Message: "Your session has ended. Sign in again."}})
			}
			if r.Header.Get("HX-Request") != "" {
				// An htmx refresh cannot follow a redirect to a full page: send it there.
				ctx.Response().Header().Set("HX-Redirect", "/ui/signin")
				return ctx.NoContent(http.StatusUnauthorized)
			}
			return ctx.Redirect(http.StatusSeeOther, "/ui/signin")
		}
		ctx.SetRequest(r.WithContext(tenancy.WithPrincipal(r.Context(), s.principal())))
		ctx.Set("session", s)
		if r.Method == http.MethodPost && !s.checkCSRF(formValue(ctx, "csrf")) {
			return c.render(ctx, http.StatusForbidden, "error", page{Title: "Refused",
				Data: errorView{Message: "This form is missing its security token or it is stale. Go back, reload the page and try again."}})
		}
		return next(ctx)
	}
}

// formValue reads a field of a POST's form body; the query string is never a form.
func formValue(ctx echo.Context, name string) string { return ctx.Request().PostFormValue(name) }

// lookupSession reads the session a cookie names under the failed-authentication budget of
// the client's address, the one bad keys spend: a cookie that names no session spends one
// failure, and past the budget a cookie this replica has not seen good is not read at all
// (the client signs in again: a key whose id exists is always checked).
func (c *console) lookupSession(ctx echo.Context, cookie string) (session, error) {
	addr := ctx.RealIP()
	known := c.sessions.seen(cookie)
	if !known && c.Auth.SessionAllowed(addr) != nil {
		return session{}, errNoSession
	}
	s, err := c.sessions.lookup(ctx.Request().Context(), cookie)
	switch {
	case err == nil:
		c.sessions.remember(cookie)
	case errors.Is(err, errNoSession):
		c.sessions.forget(cookie)
		c.Auth.SessionFailed(addr)
	}
	return s, err
}

func sessionOf(ctx echo.Context) session { s, _ := ctx.Get("session").(session); return s }

func tenantOf(ctx echo.Context) string { return sessionOf(ctx).TenantID }
