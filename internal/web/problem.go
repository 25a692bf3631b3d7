package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// problemOf turns any error into the problem sent to the caller. Unknown errors become a
// generic 500: their cause is logged, never sent.
func problemOf(err error) (*apperr.Error, bool) {
	if e, ok := apperr.As(err); ok {
		return e, true
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return apperr.New(api.CodeNotFound, "no such route"), true
		case http.StatusMethodNotAllowed:
			return apperr.New(api.CodeMethodNotAllowed, "method not allowed on this route"), true
		case http.StatusRequestEntityTooLarge:
			return apperr.New(api.CodeBodyTooLarge, "the request body is too large"), true
		case http.StatusUnauthorized:
			return apperr.New(api.CodeUnauthorized, "missing or invalid API key"), true
		case http.StatusBadRequest:
			return apperr.New(api.CodeInvalidRequest, "malformed request"), true
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apperr.New(api.CodeBodyTooLarge, "the request body is larger than %d bytes", mbe.Limit), true
	}
	if errors.Is(err, sqldb.ErrUnavailable) {
		return &apperr.Error{Code: api.CodeDatabaseUnavailable, Detail: "the database is unavailable; retry later", RetryAfter: retryUnavailable}, true
	}
	if errors.Is(err, context.Canceled) {
		return apperr.New(api.CodeInvalidRequest, "request canceled"), true
	}
	return &apperr.Error{Code: api.CodeInternal, Detail: "internal error"}, false
}

const retryUnavailable = 2e9 // 2s

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e, known := problemOf(err)
	status := e.Code.Status()
	if !known || status >= 500 {
		s.log.ErrorContext(c.Request().Context(), "request failed", "err", err,
			"request_id", requestID(c), "method", c.Request().Method, "path", c.Path())
	}
	p := api.Problem{
		Type:     api.ProblemType(e.Code),
		Title:    e.Code.Title(),
		Status:   status,
		Detail:   e.Detail,
		Code:     e.Code,
		Instance: requestID(c),
		Errors:   e.Fields,
	}
	switch v := e.Extra["heldUntil"].(type) {
	case time.Time:
		p.HeldUntil = api.NewTime(v).Ptr()
	case string:
		if t, err := api.ParseTime(v); err == nil {
			p.HeldUntil = &t
		}
	}
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + 999999999) / 1e9)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return
	}
	if werr := jsonEncode(c.Response(), p); werr != nil {
		s.log.Debug("write problem", "err", werr)
	}
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
