package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// Problem is an error answer of the service: its RFC 9457 problem document, the HTTP status
// and, on 429, 503 and a claim's budget hold, the Retry-After the server asked for.
// errors.Is(err, ErrStaleLease) (and every other Err… of a problem code) matches a *Problem
// of that code.
type Problem struct {
	api.Problem
	// RetryAfter is the server's Retry-After (0 when absent).
	RetryAfter time.Duration
	// Method and Path name the call that got the problem.
	Method, Path string
}

// Error reads "ledger: POST /v1/attempts/…/checkpoints: 409 stale_lease: fencing token 1 is
// not the run's current epoch".
func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger: %s %s: %d", p.Method, p.Path, p.Status)
	if p.Code != "" {
		b.WriteString(" " + string(p.Code))
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	for i, f := range p.Errors {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(f.Field + " " + f.Reason)
		if i == len(p.Errors)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Is reports whether target is the sentinel of p's code.
func (p *Problem) Is(target error) bool {
	s, ok := target.(*codeError)
	return ok && s.code == p.Code
}

// codeError is the sentinel of one problem code.
type codeError struct{ code api.ProblemCode }

func (e *codeError) Error() string { return "ledger: " + string(e.code) }

// Code returns the sentinel's problem code.
func (e *codeError) Code() api.ProblemCode { return e.code }

// The sentinel of each problem code (DESIGN.md 7a): errors.Is(err, ErrStaleLease) holds for
// a *Problem with that code anywhere in err's chain.
var (
	ErrInvalidRequest       error = sentinel(api.CodeInvalidRequest)       // 400, with field errors
	ErrUnauthorized         error = sentinel(api.CodeUnauthorized)         // 401
	ErrForbidden            error = sentinel(api.CodeForbidden)            // 403
	ErrNotFound             error = sentinel(api.CodeNotFound)             // 404
	ErrMethodNotAllowed     error = sentinel(api.CodeMethodNotAllowed)     // 405
	ErrStaleLease           error = sentinel(api.CodeStaleLease)           // 409: the token is not the run's epoch
	ErrLeaseExpired         error = sentinel(api.CodeLeaseExpired)         // 409: same epoch, the lease passed
	ErrAttemptEnded         error = sentinel(api.CodeAttemptEnded)         // 409: the attempt has ended
	ErrSequenceConflict     error = sentinel(api.CodeSequenceConflict)     // 409
	ErrDecisionClosed       error = sentinel(api.CodeDecisionClosed)       // 409
	ErrDecisionLimit        error = sentinel(api.CodeDecisionLimit)        // 409: the attempt has as many pending decisions as it may
	ErrLockHeld             error = sentinel(api.CodeLockHeld)             // 409, with HeldUntil
	ErrReleaseConflict      error = sentinel(api.CodeReleaseConflict)      // 409
	ErrReleaseImmutable     error = sentinel(api.CodeReleaseImmutable)     // 409
	ErrIllegalTransition    error = sentinel(api.CodeIllegalTransition)    // 409
	ErrAttemptsExhausted    error = sentinel(api.CodeAttemptsExhausted)    // 409
	ErrIdempotencyKeyReused error = sentinel(api.CodeIdempotencyKeyReused) // 409
	ErrNoCancelRequested    error = sentinel(api.CodeNoCancelRequested)    // 409
	ErrPreconditionFailed   error = sentinel(api.CodePreconditionFailed)   // 412
	ErrBodyTooLarge         error = sentinel(api.CodeBodyTooLarge)         // 413
	ErrUnsupportedMediaType error = sentinel(api.CodeUnsupportedMediaType) // 415
	ErrLoopDepth            error = sentinel(api.CodeLoopDepth)            // 422
	ErrCorrectionLimit      error = sentinel(api.CodeCorrectionLimit)      // 422
	ErrReleaseNotActive     error = sentinel(api.CodeReleaseNotActive)     // 422
	ErrManifestMismatch     error = sentinel(api.CodeManifestMismatch)     // 422
	ErrSubjectConflict      error = sentinel(api.CodeSubjectConflict)      // 422
	ErrUnknownProject       error = sentinel(api.CodeUnknownProject)       // 422
	ErrWebhookTarget        error = sentinel(api.CodeWebhookTarget)        // 422
	ErrWebhookLimit         error = sentinel(api.CodeWebhookLimit)         // 409
	ErrUnknownDecision      error = sentinel(api.CodeUnknownDecision)      // 422
	ErrUnknownRun           error = sentinel(api.CodeUnknownRun)           // 422
	ErrBulkTooLarge         error = sentinel(api.CodeBulkTooLarge)         // 422
	ErrPreconditionRequired error = sentinel(api.CodePreconditionRequired) // 428
	ErrRateLimited          error = sentinel(api.CodeRateLimited)          // 429, with RetryAfter
	ErrInternal             error = sentinel(api.CodeInternal)             // 500
	ErrDatabaseUnavailable  error = sentinel(api.CodeDatabaseUnavailable)  // 503, with RetryAfter
)

// sentinels maps each code to its sentinel (a test keeps it equal to api.ProblemCodes).
var sentinels = map[api.ProblemCode]error{}

// sentinel makes the sentinel of code and registers it in sentinels, so that the list of
// sentinels is written once.
func sentinel(code api.ProblemCode) error {
	e := &codeError{code}
	sentinels[code] = e
	return e
}

// SentinelOf returns the sentinel error of a problem code, or nil for a code this version
// does not know.
func SentinelOf(code api.ProblemCode) error { return sentinels[code] }

// CodeOf returns the problem code of the first *Problem in err's chain, or "".
func CodeOf(err error) api.ProblemCode {
	var p *Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

// ErrMaybeApplied marks the refusal of a retried If-Match update (412, or a decision
// answer's decision_closed) when an earlier try of the same call may have reached the server:
// that try may have applied, and its own change is what the retry was refused for. The
// error also matches the problem's sentinel. Read the resource again to know.
var ErrMaybeApplied = errors.New("ledger: a retried conditional update was refused, and an earlier try of it may have applied")

// TransportError is a call that got no usable answer: the connection failed, or the answer
// could not be read.
type TransportError struct {
	Method, Path string
	// Status is the HTTP status of an answer whose body could not be read, else 0.
	Status int
	Err    error
}

// Error reads "ledger: POST /v1/runs/claim: <cause>".
func (e *TransportError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("ledger: %s %s: %d: %v", e.Method, e.Path, e.Status, e.Err)
	}
	return fmt.Sprintf("ledger: %s %s: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the cause (a *net.OpError, a context error, a decoding error).
func (e *TransportError) Unwrap() error { return e.Err }

// notSent reports whether a transport error certainly happened before any byte of the
// request reached a server: no address, or no connection.
func notSent(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// problemOf reads an error answer: a problem document when it is one, else a problem made
// of the status (a proxy's page, say).
func problemOf(method, path string, resp *http.Response, body []byte) *Problem {
	p := &Problem{Method: method, Path: path, RetryAfter: retryAfter(resp.Header)}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/problem+json" || ct == "application/json" {
		_ = json.Unmarshal(body, &p.Problem) // a partial document still says more than none
	}
	if p.Status == 0 || p.Status != resp.StatusCode {
		p.Status = resp.StatusCode
	}
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	if p.Code == "" && p.Detail == "" {
		p.Detail = strings.TrimSpace(string(body[:min(len(body), 200)]))
	}
	return p
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
