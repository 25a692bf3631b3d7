package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// ErrClientGone is a request's failure because its client went away: its body stopped
// arriving, or the request was cancelled as its connection closed. It is no fault of the
// request, so it is logged and counted as a client disconnect (status 499, as proxies log
// it), not as a 400 (the 400 still written goes to a connection that is gone).
var ErrClientGone = errors.New("the client went away")

// StatusClientGone is the status logged (and counted) for a request whose client went
// away before its answer.
const StatusClientGone = 499

// clientGone reports whether err ended c's request because its client went away.
func clientGone(c echo.Context, err error) bool {
	return errors.Is(err, ErrClientGone) ||
		errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil
}

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
	// A store that expects a foreign key or a constraint to refuse turns the refusal into
	// its own code; one that reaches here raced a deletion (the row it references is gone)
	// or broke an invariant the database guards (a trigger, a CHECK, the tenant policy).
	// Either way the request changed nothing: say so with a code, and log it (false).
	if errors.Is(err, sqldb.ErrBadReference) {
		return apperr.New(api.CodeNotFound, "a record this request refers to no longer exists"), false
	}
	if errors.Is(err, sqldb.ErrRefused) {
		return apperr.New(api.CodeIllegalTransition, "the database refused the change"), false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrClientGone) {
		return apperr.New(api.CodeInvalidRequest, "request canceled"), true
	}
	return &apperr.Error{Code: api.CodeInternal, Detail: "internal error"}, false
}

// A refusal by the database that reaches problemOf answers illegal_transition on every route
// that inserts or updates (RefusedWrite: the document lists it there), since every tenant
// table is guarded on INSERT and UPDATE (CHECK constraints, the run guard and rowversion
// triggers, SQL Server's tenant BLOCK predicates); a reference that is gone answers not_found,
// which only routes that list not_found themselves can meet: the rows a write references that
// can be deleted are runs and attempts (retention), and every route writing a reference to
// one already answers not_found for it (projects and tenants are never deleted, and nothing
// references a task lock, the one row a route deletes).

// insertsOrUpdates reports whether a route of this method writes rows the database can
// refuse (every POST, PUT and PATCH does; DELETE only removes a task lock).
func insertsOrUpdates(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// RefusedWrite is the code a route of this method answers when the database refuses its
// write, and whether the route can answer it at all.
func RefusedWrite(method string) (api.ProblemCode, bool) {
	return api.CodeIllegalTransition, insertsOrUpdates(method)
}

// retryUnavailable is the Retry-After of a 503: Azure SQL's transient errors (a failover,
// reconfiguration, throttling) ask clients to wait at least 5 s before retrying.
const retryUnavailable = 5 * time.Second

// SetRetryAfter says when to come back, in whole seconds rounded up: the API's problems
// and the console's error pages both tell a refused client this way.
func SetRetryAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
}

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
	}
	p.Errors, p.MoreErrors = boundFields(e.Fields)
	if !e.HeldUntil.IsZero() {
		p.HeldUntil = api.NewTime(e.HeldUntil).Ptr()
	}
	if e.RetryAfter > 0 {
		SetRetryAfter(c.Response().Header(), e.RetryAfter)
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

// boundFields is the field errors a problem lists: the first api.MaxFieldErrors, names cut
// to api.MaxFieldNameBytes, and how many more there were.
func boundFields(fields []api.FieldError) ([]api.FieldError, int) {
	more := 0
	if len(fields) > api.MaxFieldErrors {
		more = len(fields) - api.MaxFieldErrors
		fields = fields[:api.MaxFieldErrors]
	}
	var out []api.FieldError
	for i, f := range fields {
		if len(f.Field) > api.MaxFieldNameBytes {
			if out == nil {
				out = append([]api.FieldError(nil), fields...)
			}
			out[i].Field = strings.ToValidUTF8(f.Field[:api.MaxFieldNameBytes-len("…")], "") + "…"
		}
	}
	if out == nil {
		out = fields
	}
	return out, more
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
