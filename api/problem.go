package api

// ProblemCode is a problem document's stable code (DESIGN.md 7a). Unlike the other
// enumerations it decodes any string, so a client keeps working when a newer server adds a
// code; Valid reports whether this version knows it.
type ProblemCode string

// The problem codes, by HTTP status.
const (
	CodeInvalidRequest ProblemCode = "invalid_request" // 400, with field errors
	CodeUnauthorized   ProblemCode = "unauthorized"    // 401
	CodeForbidden      ProblemCode = "forbidden"       // 403
	CodeNotFound       ProblemCode = "not_found"       // 404

	CodeMethodNotAllowed ProblemCode = "method_not_allowed" // 405, with Allow

	CodeStaleLease           ProblemCode = "stale_lease"            // 409
	CodeLeaseExpired         ProblemCode = "lease_expired"          // 409
	CodeAttemptEnded         ProblemCode = "attempt_ended"          // 409
	CodeSequenceConflict     ProblemCode = "sequence_conflict"      // 409
	CodeDecisionClosed       ProblemCode = "decision_closed"        // 409
	CodeDecisionLimit        ProblemCode = "decision_limit"         // 409
	CodeLockHeld             ProblemCode = "lock_held"              // 409, with heldUntil
	CodeReleaseConflict      ProblemCode = "release_conflict"       // 409
	CodeReleaseImmutable     ProblemCode = "release_immutable"      // 409
	CodeIllegalTransition    ProblemCode = "illegal_transition"     // 409
	CodeAttemptsExhausted    ProblemCode = "attempts_exhausted"     // 409
	CodeIdempotencyKeyReused ProblemCode = "idempotency_key_reused" // 409
	CodeNoCancelRequested    ProblemCode = "no_cancel_requested"    // 409

	CodePreconditionFailed   ProblemCode = "precondition_failed"    // 412
	CodeBodyTooLarge         ProblemCode = "body_too_large"         // 413
	CodeUnsupportedMediaType ProblemCode = "unsupported_media_type" // 415

	CodeLoopDepth        ProblemCode = "loop_depth"         // 422
	CodeCorrectionLimit  ProblemCode = "correction_limit"   // 422
	CodeReleaseNotActive ProblemCode = "release_not_active" // 422
	CodeManifestMismatch ProblemCode = "manifest_mismatch"  // 422
	CodeSubjectConflict  ProblemCode = "subject_conflict"   // 422
	CodeUnknownProject   ProblemCode = "unknown_project"    // 422

	CodePreconditionRequired ProblemCode = "precondition_required" // 428
	CodeRateLimited          ProblemCode = "rate_limited"          // 429, with Retry-After
	CodeInternal             ProblemCode = "internal"              // 500
	CodeDatabaseUnavailable  ProblemCode = "database_unavailable"  // 503, with Retry-After
)

var problemCodeNames = names{
	"invalid_request", "unauthorized", "forbidden", "not_found", "method_not_allowed",
	"stale_lease", "lease_expired", "attempt_ended", "sequence_conflict", "decision_closed", "decision_limit", "lock_held",
	"release_conflict", "release_immutable", "illegal_transition", "attempts_exhausted",
	"idempotency_key_reused", "no_cancel_requested",
	"precondition_failed", "body_too_large", "unsupported_media_type",
	"loop_depth", "correction_limit", "release_not_active", "manifest_mismatch", "subject_conflict", "unknown_project",
	"precondition_required", "rate_limited", "internal", "database_unavailable",
}

func (v ProblemCode) String() string     { return string(v) }
func (v ProblemCode) Valid() bool        { _, ok := problemCodeNames.index(string(v)); return ok }
func (ProblemCode) EnumValues() []string { return problemCodeNames.values() }

// ProblemCodes lists every code this version knows.
func ProblemCodes() []ProblemCode {
	out := make([]ProblemCode, len(problemCodeNames))
	for i, n := range problemCodeNames {
		out[i] = ProblemCode(n)
	}
	return out
}

// ProblemType is the type URI of a code: stable, and a place for its documentation.
func ProblemType(c ProblemCode) string { return "urn:ledger:problem:" + string(c) }

// Problem is an RFC 9457 problem document (application/problem+json), the body of every
// error answer.
type Problem struct {
	// Type is ProblemType(Code).
	Type string `json:"type" doc:"urn:ledger:problem:<code>"`
	// Title is the status's reason phrase.
	Title  string `json:"title"`
	Status int    `json:"status" validate:"min=400,max=599"`
	// Detail says what went wrong with this request, for a person.
	Detail string      `json:"detail,omitempty"`
	Code   ProblemCode `json:"code"`
	// Instance is the request id (X-Request-Id).
	Instance string `json:"instance,omitempty"`
	// Errors lists every invalid field of an invalid_request.
	Errors []FieldError `json:"errors,omitempty"`
	// HeldUntil is when the holder's task lock expires (lock_held).
	HeldUntil *Time `json:"heldUntil,omitempty"`
}

// FieldError names one invalid request member, parameter or header and why.
type FieldError struct {
	// Field is the member's path (child.subject), or the parameter's name.
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// ValueError is the error a wire type's UnmarshalJSON or UnmarshalText returns for a value
// it refuses. Reason is written to follow the member's name in a field error: "must be one
// of: queued, leased, ended", "is not an RFC 3339 time".
type ValueError struct{ Reason string }

func (e *ValueError) Error() string { return e.Reason }
