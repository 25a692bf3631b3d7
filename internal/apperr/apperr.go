// Package apperr is the error value of the service: every error a caller can act on carries
// one of api's stable problem codes, whose HTTP statuses are api's one table.
package apperr

import (
	"errors"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// Error is an error a caller can act on. Detail is sent to the caller, so it never holds
// SQL, internals or another tenant's data.
type Error struct {
	Code   api.ProblemCode
	Detail string
	Fields []api.FieldError
	// HeldUntil, when not zero, is the problem document's heldUntil (lock_held): when the
	// other holder's task lock expires.
	HeldUntil time.Time
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// New returns an Error with a formatted detail.
func New(code api.ProblemCode, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// FieldsInvalid returns an invalid_request error listing the bad fields.
func FieldsInvalid(fields ...api.FieldError) *Error {
	return &Error{Code: api.CodeInvalidRequest, Detail: "the request has invalid fields", Fields: fields}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf returns err's code: Internal for an error that carries none, "" for nil.
func CodeOf(err error) api.ProblemCode {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Code
	}
	return api.CodeInternal
}

// Is reports whether err carries code.
func Is(err error, code api.ProblemCode) bool { return CodeOf(err) == code }
