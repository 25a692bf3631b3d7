package runs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	ledgerhistory "github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/runs"
)

// TestWhyItFailed: the error a holder reports, or the server's own, is kept on the attempt
// and copied to the run (DESIGN.md section 5b, issue 29 item 1).
func TestWhyItFailed(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range failureCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, tgt)
			})
		}
	})
}

func (e *env) attempt(a attempts.Attempt) attempts.Attempt {
	e.t.Helper()
	got, err := ledgerhistory.NewStore(e.db).Get(e.ctx, e.tenant, a.AttemptID)
	if err != nil {
		e.t.Fatalf("read attempt: %v", err)
	}
	return got
}

func runErr(r runs.Run) (code, message string) {
	if r.ErrorCode != nil {
		code = *r.ErrorCode
	}
	if r.ErrorMessage != nil {
		message = *r.ErrorMessage
	}
	return code, message
}

var failureCases = []leaseCase{
	{"CompleteKeepsTheErrorAndAnExactRepeatAnswersAsTheFirst", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		f := runs.FailureOf(&api.AttemptError{Code: "tool_timeout", Message: "search did not answer",
			Details: []byte(`{ "stack": ["a.go:1", "b.go:2"] }`)})
		a, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptFailed, Error: f})
		if err != nil {
			t.Fatal(err)
		}
		want := &attempts.Failure{Code: "tool_timeout", Message: "search did not answer", Details: `{"stack":["a.go:1","b.go:2"]}`}
		if !a.Failure().Equal(want) || !e.attempt(a).Failure().Equal(want) {
			t.Fatalf("attempt error %+v (stored %+v), want %+v", a.Failure(), e.attempt(a).Failure(), want)
		}
		if w := a.Wire().Error; w == nil || w.Code != "tool_timeout" || string(w.Details) != want.Details {
			t.Fatalf("wire error %+v", w)
		}
		r := e.get(cl.Run.RunID)
		if code, msg := runErr(r); *r.Outcome != api.OutcomeFailed || code != "tool_timeout" || msg != "search did not answer" {
			t.Fatalf("run %s %q %q, want failed with the attempt's code and message", *r.Outcome, code, msg)
		}
		// The same completion again (details spaced otherwise) answers as the first did.
		again, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Completion{State: api.AttemptFailed,
			Error: runs.FailureOf(&api.AttemptError{Code: "tool_timeout", Message: "search did not answer",
				Details: []byte(`{"stack":["a.go:1","b.go:2"]}`)})})
		if err != nil || again.Version != a.Version {
			t.Fatalf("exact repeat: %v (version %d, want %d)", err, again.Version, a.Version)
		}
		// Another error, or none, is not a repeat.
		for _, other := range []*attempts.Failure{nil, {Code: "tool_timeout", Message: "other"}} {
			if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1,
				runs.Completion{State: api.AttemptFailed, Error: other}); !apperr.Is(err, api.CodeAttemptEnded) {
				t.Fatalf("complete with error %+v after the first: got %v, want attempt_ended", other, err)
			}
		}
		e.agree()
	}},
	{"ABadErrorIsRefusedAndChangesNothing", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s"))
		cl := e.claim()
		for name, c := range map[string]runs.Completion{
			"uppercase code": {State: api.AttemptFailed, Error: &attempts.Failure{Code: "Timeout"}},
			"long code":      {State: api.AttemptFailed, Error: &attempts.Failure{Code: strings.Repeat("a", 65)}},
			"long message":   {State: api.AttemptFailed, Error: &attempts.Failure{Code: "x", Message: strings.Repeat("é", 2001)}},
			"control char":   {State: api.AttemptFailed, Error: &attempts.Failure{Code: "x", Message: "a\x00b"}},
			"large details": {State: api.AttemptFailed, Error: &attempts.Failure{Code: "x",
				Details: `"` + strings.Repeat("d", api.MaxErrorDetailsBytes) + `"`}},
			"on success": {State: api.AttemptSucceeded, Error: &attempts.Failure{Code: "x"}},
		} {
			if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, c); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("%s: got %v, want invalid_request", name, err)
			}
			if name == "on success" {
				continue
			}
			if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Release{Error: c.Error}); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("release with %s: got %v, want invalid_request", name, err)
			}
		}
		if r := e.get(cl.Run.RunID); r.State != api.RunLeased || r.Version != cl.Run.Version {
			t.Fatalf("a refused write changed the run: %+v", r)
		}
	}},
	{"ReleaseKeepsTheErrorAndAnExhaustedRunKeepsTheLast", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s", func(s *runs.Spec) { s.MaxAttempts = 2 }))
		cl := e.claim()
		zero := time.Duration(0)
		a, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Release{Charge: true, RetryAfter: &zero,
			Error: &attempts.Failure{Code: "rate_limited", Message: "429 from the model"}})
		if err != nil || a.Failure() == nil || a.Failure().Code != "rate_limited" {
			t.Fatalf("release: %v %+v", err, a.Failure())
		}
		r := e.get(cl.Run.RunID)
		if code, _ := runErr(r); r.State != api.RunQueued || code != "rate_limited" {
			t.Fatalf("requeued run %s %q, want queued with the release's error", r.State, code)
		}
		cl = e.claim()
		if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 2, runs.Release{Charge: true,
			Error: &attempts.Failure{Code: "tool_failed", Message: "the second"}}); err != nil {
			t.Fatal(err)
		}
		r = e.get(cl.Run.RunID)
		if code, msg := runErr(r); *r.Outcome != api.OutcomeExhausted || code != "tool_failed" || msg != "the second" {
			t.Fatalf("exhausted run %s %q %q, want the last attempt's error", *r.Outcome, code, msg)
		}
		e.agree()
	}},
	{"TheReaperWritesLeaseLost", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		e.enqueue(spec("s", func(s *runs.Spec) { s.MaxAttempts = 2 }))
		cl := e.claim()
		e.clock.Advance(31 * time.Second)
		if res, err := e.svc.Reap(e.ctx); err != nil || res.TakenBack != 1 {
			t.Fatalf("reap: %+v %v", res, err)
		}
		a := e.attempt(cl.Attempt)
		if a.State != api.AttemptLost || a.Failure() == nil || a.Failure().Code != runs.ErrorLeaseLost ||
			!strings.Contains(a.Failure().Message, "epoch 1") {
			t.Fatalf("lost attempt %s %+v, want lease_lost naming the epoch", a.State, a.Failure())
		}
		if code, _ := runErr(e.get(cl.Run.RunID)); code != runs.ErrorLeaseLost {
			t.Fatalf("requeued run error %q, want lease_lost", code)
		}
		// Lost again at the attempt limit: the exhausted run keeps the last attempt's error.
		e.clock.Advance(time.Hour)
		cl = e.claim()
		e.clock.Advance(31 * time.Second)
		if _, err := e.svc.Reap(e.ctx); err != nil {
			t.Fatal(err)
		}
		r := e.get(cl.Run.RunID)
		if code, _ := runErr(r); *r.Outcome != api.OutcomeExhausted || code != runs.ErrorLeaseLost {
			t.Fatalf("run %s %q, want exhausted with lease_lost", *r.Outcome, code)
		}
		e.agree()
	}},
	{"CancelAndDeadlineSayTheirCode", func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		queued := e.enqueue(spec("q"))
		if _, err := e.svc.Cancel(e.ctx, e.tenant, queued.RunID); err != nil {
			t.Fatal(err)
		}
		if code, _ := runErr(e.get(queued.RunID)); code != runs.ErrorCancelled {
			t.Fatalf("cancelled queued run error %q", code)
		}
		// A leased run with a cancel pending: the holder's release ends it cancelled.
		e.enqueue(spec("l"))
		cl := e.claim()
		if _, err := e.svc.Cancel(e.ctx, e.tenant, cl.Run.RunID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(e.ctx, e.tenant, cl.Attempt.AttemptID, 1, runs.Release{
			Error: &attempts.Failure{Code: "stopping"}}); err != nil {
			t.Fatal(err)
		}
		r := e.get(cl.Run.RunID)
		if code, msg := runErr(r); *r.Outcome != api.OutcomeCancelled || code != runs.ErrorCancelled || !strings.Contains(msg, "cancel was requested") {
			t.Fatalf("run %s %q %q, want cancelled", *r.Outcome, code, msg)
		}
		// A queued run past its deadline.
		deadline := epoch.Add(time.Minute)
		late := e.enqueue(spec("d", func(s *runs.Spec) { d := epoch.Add(30 * time.Second); s.DueAt = &d; s.DeadlineAt = &deadline }))
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.Reap(e.ctx); err != nil {
			t.Fatal(err)
		}
		r = e.get(late.RunID)
		if code, _ := runErr(r); *r.Outcome != api.OutcomeDeadline || code != runs.ErrorDeadline {
			t.Fatalf("run %v %q, want deadline", r.Outcome, code)
		}
		e.agree()
	}},
}
