// Package apperr is the error vocabulary of the service: every error a caller can act on
// carries one of these stable codes, and the HTTP layer maps codes to statuses in one table.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Code is a stable, documented problem code (DESIGN.md section 7a).
type Code string

// The problem codes. Their HTTP statuses are fixed by web.statusOf.
const (
	Invalid              Code = "invalid_request"
	Unauthorized         Code = "unauthorized"
	Forbidden            Code = "forbidden"
	NotFound             Code = "not_found"
	StaleLease           Code = "stale_lease"
	LeaseExpired         Code = "lease_expired"
	SequenceConflict     Code = "sequence_conflict"
	DecisionClosed       Code = "decision_closed"
	LockHeld             Code = "lock_held"
	ReleaseConflict      Code = "release_conflict"
	ReleaseImmutable     Code = "release_immutable"
	IllegalTransition    Code = "illegal_transition"
	AttemptsExhausted    Code = "attempts_exhausted"
	PreconditionFailed   Code = "precondition_failed"
	BodyTooLarge         Code = "body_too_large"
	LoopDepth            Code = "loop_depth"
	CorrectionLimit      Code = "correction_limit"
	ReleaseNotActive     Code = "release_not_active"
	ManifestMismatch     Code = "manifest_mismatch"
	SubjectConflict      Code = "subject_conflict"
	UnknownProject       Code = "unknown_project"
	PreconditionRequired Code = "precondition_required"
	RateLimited          Code = "rate_limited"
	DatabaseUnavailable  Code = "database_unavailable"
	Internal             Code = "internal"

	// Added by DESIGN.md 7a after the first release of the contract.
	IdempotencyKeyReused Code = "idempotency_key_reused"
	NoCancelRequested    Code = "no_cancel_requested"
	AttemptEnded         Code = "attempt_ended"
	UnsupportedMediaType Code = "unsupported_media_type"
	MethodNotAllowed     Code = "method_not_allowed"
)

// FieldError names one request field that failed validation and why.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

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
