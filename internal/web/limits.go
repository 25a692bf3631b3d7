package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
)

// limitInFlight refuses requests beyond max running at once with 429 rate_limited and a
// Retry-After, so an overloaded replica sheds load instead of queueing it until clients
// time out. The health, metrics and document routes are never refused.
func limitInFlight(max int) echo.MiddlewareFunc {
	slots := make(chan struct{}, max)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !strings.HasPrefix(c.Request().URL.Path, "/v1/") {
				return next(c)
			}
			select {
			case slots <- struct{}{}:
			default:
				return &apperr.Error{Code: apperr.RateLimited, Detail: "the server is at its limit of requests in flight; retry later", RetryAfter: 1e9}
			}
			defer func() { <-slots }()
			return next(c)
		}
	}
}
