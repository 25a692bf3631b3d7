// Package apperr is the error vocabulary of the service: every error a caller can act on
// carries one of these stable codes, and the HTTP layer maps codes to statuses in one table.
package apperr

import (
	"errors"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// Code is a stable, documented problem code (DESIGN.md section 7a): the api package's,
// so the server, the SDK and the OpenAPI document share one list.
type Code = api.ProblemCode

// The problem codes under the names the services use. Their HTTP statuses are fixed by
// web.statusOf.
const (
	Invalid              = api.CodeInvalidRequest
	Unauthorized         = api.CodeUnauthorized
	Forbidden            = api.CodeForbidden
	NotFound             = api.CodeNotFound
	StaleLease           = api.CodeStaleLease
	LeaseExpired         = api.CodeLeaseExpired
	SequenceConflict     = api.CodeSequenceConflict
	DecisionClosed       = api.CodeDecisionClosed
	DecisionLimit        = api.CodeDecisionLimit
	LockHeld             = api.CodeLockHeld
	ReleaseConflict      = api.CodeReleaseConflict
	ReleaseImmutable     = api.CodeReleaseImmutable
	IllegalTransition    = api.CodeIllegalTransition
	AttemptsExhausted    = api.CodeAttemptsExhausted
	PreconditionFailed   = api.CodePreconditionFailed
	BodyTooLarge         = api.CodeBodyTooLarge
	LoopDepth            = api.CodeLoopDepth
	CorrectionLimit      = api.CodeCorrectionLimit
	ReleaseNotActive     = api.CodeReleaseNotActive
	ManifestMismatch     = api.CodeManifestMismatch
	SubjectConflict      = api.CodeSubjectConflict
	UnknownProject       = api.CodeUnknownProject
	PreconditionRequired = api.CodePreconditionRequired
	RateLimited          = api.CodeRateLimited
	DatabaseUnavailable  = api.CodeDatabaseUnavailable
	Internal             = api.CodeInternal
	IdempotencyKeyReused = api.CodeIdempotencyKeyReused
	NoCancelRequested    = api.CodeNoCancelRequested
	AttemptEnded         = api.CodeAttemptEnded
	UnsupportedMediaType = api.CodeUnsupportedMediaType
	MethodNotAllowed     = api.CodeMethodNotAllowed
)

// FieldError names one request field that failed validation and why.
type FieldError = api.FieldError

// Error is an error a caller can act on. Detail is sent to the caller, so it never holds
// SQL, internals or another tenant's data.
type Error struct {
	Code   Code
	Detail string
	Fields []FieldError
	// Extra members of the problem document, such as heldUntil for lock_held.
	Extra map[string]any
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
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Fields returns an invalid_request error listing the bad fields.
func FieldsInvalid(fields ...FieldError) *Error {
	return &Error{Code: Invalid, Detail: "the request has invalid fields", Fields: fields}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf returns err's code: Internal for an error that carries none, "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return CodeOf(err) == code }
