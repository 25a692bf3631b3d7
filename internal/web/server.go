// Package web is the HTTP base every resource shares: Echo set up with strict JSON binding,
// validation, RFC 9457 problems, request ids, JSON access logs, Prometheus metrics, the
// health routes and the catalogue of the routes registered through it (which package
// openapi documents).
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// Config is the HTTP layer's configuration.
type Config struct {
	// MaxBody is the largest request body accepted; larger ones are 413.
	MaxBody int64
	Logger  *slog.Logger
	// Ready reports whether the service can serve (database reachable, schema current).
	Ready func(ctx context.Context) error
	// Version appears in the OpenAPI document.
	Version string
	// TrustedProxies are the proxies whose X-Forwarded-For names the client's address;
	// requests from anywhere else are from their TCP peer.
	TrustedProxies []*net.IPNet
	// Identify names the tenant and key of an authenticated request, for the access log
	// (ok false: an anonymous request). Nil: requests are logged without them.
	Identify func(ctx context.Context) (tenantID, keyID string, ok bool)
	// Observe, when set, hears every request once it is answered (metrics).
	Observe func(Request)
	// Conns caps the connections Start holds open.
	Conns ConnLimits
}

// Request is what Observe hears of an answered request.
type Request struct {
	Method, Route string
	Status        int
	// Code is the problem code the request was answered with ("" for a success).
	Code api.ProblemCode
	// TenantID and KeyID name the caller ("" when anonymous).
	TenantID, KeyID string
	Duration        time.Duration
	// Header is the response's header (a claim's 204 with Retry-After is a budget hold).
	Header http.Header
}

// Server is the Echo instance with the service's conventions and its route catalogue.
type Server struct {
	Echo     *echo.Echo
	Registry *prometheus.Registry
	log      *slog.Logger
	ops      []Operation
	routes   []routeMethods
	auth     Authenticator
	version  string
	identify func(ctx context.Context) (string, string, bool)
	notify   func(Request)
	conns    ConnLimits
	trusted  []*net.IPNet
	// onShutdown are called as Start begins to drain (OnShutdown).
	onShutdown []func()

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// New builds the server and registers /healthz, /readyz and /metrics (openapi.Route adds
// /openapi.json).
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Validator = NewValidator()
	e.IPExtractor = ipExtractor(cfg.TrustedProxies)
	s := &Server{Echo: e, Registry: prometheus.NewRegistry(), log: cfg.Logger, version: cfg.Version,
		identify: cfg.Identify, notify: cfg.Observe, conns: cfg.Conns, trusted: cfg.TrustedProxies}
	e.HTTPErrorHandler = s.handleError
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"method", "route", "status"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ledger_http_request_duration_seconds", Help: "HTTP request latency by route.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"method", "route"})
	s.Registry.MustRegister(s.requests, s.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	e.Use(keepRequestID)
	e.Use(s.observe)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.ErrorContext(c.Request().Context(), "panic", "err", err, "stack", string(stack), "request_id", requestID(c))
			return err
		},
	}))
	e.Use(s.methodNotAllowed)
	e.Use(limitBody(cfg.MaxBody))

	s.Route(http.MethodGet, "/healthz", Op{ID: "getHealth", Tag: "System", Summary: "Process liveness",
		Description: "Answers 200 while the process serves; it checks nothing else.", Public: true, Status: http.StatusOK, Response: api.Health{}},
		func(c echo.Context) error { return c.JSON(http.StatusOK, api.Health{Status: "ok"}) })
	s.Route(http.MethodGet, "/readyz", Op{ID: "getReadiness", Tag: "System", Summary: "Readiness: database reachable and schema current",
		Description: "Answers 200 when the database answers and its schema is the one this binary needs, else 503 database_unavailable (the cause is logged, not sent).", Public: true, Status: http.StatusOK, Response: api.Health{}, Problems: []api.ProblemCode{api.CodeDatabaseUnavailable}},
		func(c echo.Context) error {
			if cfg.Ready != nil {
				if err := cfg.Ready(c.Request().Context()); err != nil {
					// A problem like every other error, documented as such; the cause (driver
					// text, host names) goes to the log only, since this route needs no key.
					return fmt.Errorf("not ready: %w: %w", &apperr.Error{Code: api.CodeDatabaseUnavailable, RetryAfter: retryUnavailable,
						Detail: "not ready: the database is unreachable or its schema is not current"}, err)
				}
			}
			return c.JSON(http.StatusOK, api.Health{Status: "ok"})
		})
	s.Route(http.MethodGet, "/metrics", Op{ID: "getMetrics", Tag: "System", Summary: "Prometheus metrics",
		Description: "The metrics in the Prometheus text exposition format (prefix ledger_).", Public: true,
		Headers: map[string]string{"Content-Encoding": "gzip when the request accepts it", "Vary": "Accept-Encoding"}, Status: http.StatusOK, RawResponse: "text/plain"},
		echo.WrapHandler(promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry})))
	return s
}

// limitBody refuses bodies larger than max: at once when Content-Length says so, and while
// reading otherwise (Bind turns the reader's error into 413).
func limitBody(max int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > max {
				return &echo.HTTPError{Code: http.StatusRequestEntityTooLarge}
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, max)
			return next(c)
		}
	}
}

// observe logs one JSON line per request (with the caller's tenant and key id once the
// authenticator has named them) and records metrics.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		var code api.ProblemCode
		gone := err != nil && clientGone(c, err)
		if err != nil {
			// Write the problem now so the status below is the one sent (to a client that
			// went away, a 400 nobody reads: what is logged and counted is the disconnect).
			s.handleError(err, c)
			if e, _ := problemOf(err); !gone {
				code = e.Code
			}
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		if gone {
			status = StatusClientGone
		}
		d := time.Since(start)
		s.requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Inc()
		s.latency.WithLabelValues(c.Request().Method, route).Observe(d.Seconds())
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		// The authenticator put the principal on the request it handed on; c holds that one.
		var tenant, key string
		if s.identify != nil {
			tenant, key, _ = s.identify(c.Request().Context())
		}
		attrs := []slog.Attr{slog.String("request_id", requestID(c)), slog.String("method", c.Request().Method),
			slog.String("route", route), slog.Int("status", status),
			slog.Float64("ms", float64(d.Microseconds())/1000), slog.Int64("bytes", c.Response().Size)}
		if tenant != "" {
			attrs = append(attrs, slog.String("tenant", tenant), slog.String("key_id", key))
		}
		if code != "" {
			attrs = append(attrs, slog.String("code", string(code)))
		}
		msg := "request"
		if gone {
			msg = "client disconnected"
		}
		s.log.LogAttrs(c.Request().Context(), level, msg, attrs...)
		if s.notify != nil {
			s.notify(Request{Method: c.Request().Method, Route: route, Status: status, Code: code,
				TenantID: tenant, KeyID: key, Duration: d, Header: c.Response().Header()})
		}
		return nil
	}
}

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// OnShutdown has f called when Start begins to drain, so that requests waiting for a change
// (waitSeconds) answer at once rather than hold the drain up. Call it while wiring.
func (s *Server) OnShutdown(f func()) { s.onShutdown = append(s.onShutdown, f) }

// Start serves on addr until ctx ends, then shuts down (Serve).
func (s *Server) Start(ctx context.Context, addr string, grace time.Duration, listening func(addr string)) error {
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	if listening != nil {
		listening(ln.Addr().String())
	}
	return s.Serve(ctx, ln, grace)
}

// Serve serves on ln, within the connection limits, until ctx ends. Then it stops
// accepting, calls the OnShutdown functions (waiting requests answer at once), and lets the
// requests in flight finish for up to grace: nil when they all did, an error when the
// grace ran out first.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.Echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Long-polling claims wait up to 30 s before they answer.
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	for _, f := range s.onShutdown {
		srv.RegisterOnShutdown(f)
	}
	ln = newLimitListener(ln, s.conns, s.trusted, s.log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: requests still in flight after --shutdown-grace %s: %w", grace, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
