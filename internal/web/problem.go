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

// statusOf is the one place problem codes meet HTTP statuses (DESIGN.md section 7a).
var statusOf = map[apperr.Code]int{
	apperr.Invalid:              http.StatusBadRequest,
	apperr.Unauthorized:         http.StatusUnauthorized,
	apperr.Forbidden:            http.StatusForbidden,
	apperr.NotFound:             http.StatusNotFound,
	apperr.StaleLease:           http.StatusConflict,
	apperr.LeaseExpired:         http.StatusConflict,
	apperr.SequenceConflict:     http.StatusConflict,
	apperr.DecisionClosed:       http.StatusConflict,
	apperr.DecisionLimit:        http.StatusConflict,
	apperr.LockHeld:             http.StatusConflict,
	apperr.ReleaseConflict:      http.StatusConflict,
	apperr.ReleaseImmutable:     http.StatusConflict,
	apperr.IllegalTransition:    http.StatusConflict,
	apperr.AttemptsExhausted:    http.StatusConflict,
	apperr.PreconditionFailed:   http.StatusPreconditionFailed,
	apperr.BodyTooLarge:         http.StatusRequestEntityTooLarge,
	apperr.LoopDepth:            http.StatusUnprocessableEntity,
	apperr.CorrectionLimit:      http.StatusUnprocessableEntity,
	apperr.ReleaseNotActive:     http.StatusUnprocessableEntity,
	apperr.ManifestMismatch:     http.StatusUnprocessableEntity,
	apperr.SubjectConflict:      http.StatusUnprocessableEntity,
	apperr.UnknownProject:       http.StatusUnprocessableEntity,
	apperr.PreconditionRequired: http.StatusPreconditionRequired,
	apperr.RateLimited:          http.StatusTooManyRequests,
	apperr.DatabaseUnavailable:  http.StatusServiceUnavailable,
	apperr.Internal:             http.StatusInternalServerError,
	apperr.IdempotencyKeyReused: http.StatusConflict,
	apperr.NoCancelRequested:    http.StatusConflict,
	apperr.AttemptEnded:         http.StatusConflict,
	apperr.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	apperr.MethodNotAllowed:     http.StatusMethodNotAllowed,
}

// StatusOf returns the HTTP status of a problem code.
func StatusOf(c apperr.Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Problem is an RFC 9457 problem document with the service's stable code.
type Problem = api.Problem

// ProblemType is the type URI of a code: stable, and a place for its documentation.
func ProblemType(c apperr.Code) string { return api.ProblemType(c) }

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
			return apperr.New(apperr.NotFound, "no such route"), true
		case http.StatusMethodNotAllowed:
			return apperr.New(apperr.MethodNotAllowed, "method not allowed on this route"), true
		case http.StatusRequestEntityTooLarge:
			return apperr.New(apperr.BodyTooLarge, "the request body is too large"), true
		case http.StatusUnauthorized:
			return apperr.New(apperr.Unauthorized, "missing or invalid API key"), true
		case http.StatusBadRequest:
			return apperr.New(apperr.Invalid, "malformed request"), true
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apperr.New(apperr.BodyTooLarge, "the request body is larger than %d bytes", mbe.Limit), true
	}
	if errors.Is(err, sqldb.ErrUnavailable) {
		return &apperr.Error{Code: apperr.DatabaseUnavailable, Detail: "the database is unavailable; retry later", RetryAfter: retryUnavailable}, true
	}
	if errors.Is(err, context.Canceled) {
		return apperr.New(apperr.Invalid, "request canceled"), true
	}
	return &apperr.Error{Code: apperr.Internal, Detail: "internal error"}, false
}

const retryUnavailable = 2e9 // 2s

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e, known := problemOf(err)
	status := StatusOf(e.Code)
	if !known || status >= 500 {
		s.log.ErrorContext(c.Request().Context(), "request failed", "err", err,
			"request_id", requestID(c), "method", c.Request().Method, "path", c.Path())
	}
	p := Problem{
		Type:     ProblemType(e.Code),
		Title:    http.StatusText(status),
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
