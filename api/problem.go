package api

import "net/http"

// ProblemCode is a problem document's stable code (DESIGN.md 7a). Unlike the other
// enumerations it decodes any string, so a client keeps working when a newer server adds a
// code; Valid reports whether this version knows it.
type ProblemCode string

// The problem codes. Each one's HTTP status is in problemTable, beside it nowhere else.
const (
	CodeInvalidRequest       ProblemCode = "invalid_request" // with field errors
	CodeUnauthorized         ProblemCode = "unauthorized"
	CodeForbidden            ProblemCode = "forbidden"
	CodeNotFound             ProblemCode = "not_found"
	CodeMethodNotAllowed     ProblemCode = "method_not_allowed" // with Allow
	CodeStaleLease           ProblemCode = "stale_lease"
	CodeLeaseExpired         ProblemCode = "lease_expired"
	CodeAttemptEnded         ProblemCode = "attempt_ended"
	CodeSequenceConflict     ProblemCode = "sequence_conflict"
	CodeDecisionClosed       ProblemCode = "decision_closed"
	CodeDecisionLimit        ProblemCode = "decision_limit"
	CodeLockHeld             ProblemCode = "lock_held" // with heldUntil
	CodeReleaseConflict      ProblemCode = "release_conflict"
	CodeReleaseImmutable     ProblemCode = "release_immutable"
	CodeIllegalTransition    ProblemCode = "illegal_transition"
	CodeAttemptsExhausted    ProblemCode = "attempts_exhausted"
	CodeIdempotencyKeyReused ProblemCode = "idempotency_key_reused"
	CodeNoCancelRequested    ProblemCode = "no_cancel_requested"
	CodePreconditionFailed   ProblemCode = "precondition_failed"
	CodeBodyTooLarge         ProblemCode = "body_too_large"
	CodeUnsupportedMediaType ProblemCode = "unsupported_media_type"
	CodeLoopDepth            ProblemCode = "loop_depth"
	CodeCorrectionLimit      ProblemCode = "correction_limit"
	CodeReleaseNotActive     ProblemCode = "release_not_active"
	CodeManifestMismatch     ProblemCode = "manifest_mismatch"
	CodeSubjectConflict      ProblemCode = "subject_conflict"
	CodeUnknownProject       ProblemCode = "unknown_project"
	CodeWebhookTarget        ProblemCode = "webhook_target_refused"
	CodeWebhookLimit         ProblemCode = "webhook_limit"
	CodeUnknownDecision      ProblemCode = "unknown_decision"
	CodeUnknownRun           ProblemCode = "unknown_run"
	CodeBulkTooLarge         ProblemCode = "bulk_too_large"
	CodePreconditionRequired ProblemCode = "precondition_required"
	CodeRateLimited          ProblemCode = "rate_limited" // with Retry-After
	CodeInternal             ProblemCode = "internal"
	CodeDatabaseUnavailable  ProblemCode = "database_unavailable" // with Retry-After
)

// problemTable is the one place a problem code meets its HTTP status (DESIGN.md section
// 7a), in the order the document lists the codes. The code list, the server's statuses and
// the titles of its problem documents all come from it.
var problemTable = []struct {
	code   ProblemCode
	status int
}{
	{CodeInvalidRequest, http.StatusBadRequest},
	{CodeUnauthorized, http.StatusUnauthorized},
	{CodeForbidden, http.StatusForbidden},
	{CodeNotFound, http.StatusNotFound},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed},
	{CodeStaleLease, http.StatusConflict},
	{CodeLeaseExpired, http.StatusConflict},
	{CodeAttemptEnded, http.StatusConflict},
	{CodeSequenceConflict, http.StatusConflict},
	{CodeDecisionClosed, http.StatusConflict},
	{CodeDecisionLimit, http.StatusConflict},
	{CodeLockHeld, http.StatusConflict},
	{CodeReleaseConflict, http.StatusConflict},
	{CodeReleaseImmutable, http.StatusConflict},
	{CodeIllegalTransition, http.StatusConflict},
	{CodeAttemptsExhausted, http.StatusConflict},
	{CodeIdempotencyKeyReused, http.StatusConflict},
	{CodeNoCancelRequested, http.StatusConflict},
	{CodePreconditionFailed, http.StatusPreconditionFailed},
	{CodeBodyTooLarge, http.StatusRequestEntityTooLarge},
	{CodeUnsupportedMediaType, http.StatusUnsupportedMediaType},
	{CodeLoopDepth, http.StatusUnprocessableEntity},
	{CodeCorrectionLimit, http.StatusUnprocessableEntity},
	{CodeReleaseNotActive, http.StatusUnprocessableEntity},
	{CodeManifestMismatch, http.StatusUnprocessableEntity},
	{CodeSubjectConflict, http.StatusUnprocessableEntity},
	{CodeUnknownProject, http.StatusUnprocessableEntity},
	{CodeWebhookTarget, http.StatusUnprocessableEntity},
	{CodeWebhookLimit, http.StatusConflict},
	{CodeUnknownDecision, http.StatusUnprocessableEntity},
	{CodeUnknownRun, http.StatusUnprocessableEntity},
	{CodeBulkTooLarge, http.StatusUnprocessableEntity},
	{CodePreconditionRequired, http.StatusPreconditionRequired},
	{CodeRateLimited, http.StatusTooManyRequests},
	{CodeInternal, http.StatusInternalServerError},
	{CodeDatabaseUnavailable, http.StatusServiceUnavailable},
}

var problemCodeNames = func() names {
	out := make(names, len(problemTable))
	for i, p := range problemTable {
		out[i] = string(p.code)
	}
	return out
}()

func (v ProblemCode) String() string     { return string(v) }
func (v ProblemCode) Valid() bool        { _, ok := problemCodeNames.index(string(v)); return ok }
func (ProblemCode) EnumValues() []string { return problemCodeNames.values() }

// Status is the code's HTTP status; a code this version does not know is a 500.
func (v ProblemCode) Status() int {
	if i, ok := problemCodeNames.index(string(v)); ok {
		return problemTable[i].status
	}
	return http.StatusInternalServerError
}

// Title is the title of the code's problem documents: its status's reason phrase.
func (v ProblemCode) Title() string { return http.StatusText(v.Status()) }

// ProblemCodes lists every code this version knows.
func ProblemCodes() []ProblemCode {
	out := make([]ProblemCode, len(problemTable))
	for i, p := range problemTable {
		out[i] = p.code
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
	// Errors lists the invalid fields of an invalid_request: every one, up to MaxFieldErrors.
	Errors []FieldError `json:"errors,omitempty"`
	// MoreErrors counts the invalid fields past the first MaxFieldErrors, which are not
	// listed (absent when all are).
	MoreErrors int `json:"moreErrors,omitempty" validate:"omitempty,min=1"`
	// HeldUntil is when the holder's task lock expires (lock_held).
	HeldUntil *Time `json:"heldUntil,omitempty"`
}

// MaxFieldErrors bounds the field errors one problem lists; MoreErrors counts the rest, so a
// request with thousands of bad parameters gets an answer of bounded size.
const MaxFieldErrors = 20

// MaxFieldNameBytes bounds a listed field's name (a parameter name comes from the client):
// a longer one is cut and ends with "…".
const MaxFieldNameBytes = 128

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
