package decisions_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestLedger holds the cases of how decisions follow their attempt (phase), how answers
// are checked against the decision, and what the inbox says of each item.
func TestLedger(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range ledgerCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newEnv(t, tgt))
			})
		}
	})
}

// setPhase moves the claim's attempt to phase, as its holder would.
func (e *env) setPhase(cl runs.Claimed, p api.Phase) {
	e.T.Helper()
	if _, err := e.Svc.PatchAttempt(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.AttemptPatch{Phase: &p}); err != nil {
		e.T.Fatalf("set phase %s: %v", p, err)
	}
}

func (e *env) phase(cl runs.Claimed) api.Phase {
	e.T.Helper()
	return e.attempt(cl.Attempt.AttemptID).Phase
}

func (e *env) answer(d decisions.Decision, status api.DecisionStatus, answer string) (decisions.Decision, error) {
	a := decisions.Answer{Status: status, KeyID: "admin-key", IfMatch: e.get(d.DecisionID).Version}
	if answer != "" {
		a.Answer = json.RawMessage(answer)
	}
	return e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, a)
}

func (e *env) mustAnswer(d decisions.Decision, status api.DecisionStatus, answer string) decisions.Decision {
	e.T.Helper()
	got, err := e.answer(d, status, answer)
	if err != nil {
		e.T.Fatalf("answer %s %s: %v", status, answer, err)
	}
	return got
}

// subject is the decision's run's subject ("" when it has none).
func subject(d decisions.Decision) string {
	if d.Subject == nil {
		return ""
	}
	return *d.Subject
}

// wantField checks that err is invalid_request naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	ae, ok := apperr.As(err)
	if !ok || ae.Code != api.CodeInvalidRequest || len(ae.Fields) != 1 || ae.Fields[0].Field != field {
		t.Fatalf("got %v, want invalid_request naming %q", err, field)
	}
}

var ledgerCases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"AnswerRestoresThePhaseFromBeforeTheWait", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		e.setPhase(cl, api.PhaseActing)
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		if p := e.phase(cl); p != api.PhaseAwaitingDecision {
			t.Fatalf("phase after the request %s, want awaiting_decision", p)
		}
		before := e.attempt(cl.Attempt.AttemptID)
		e.mustAnswer(d, api.DecisionRejected, "")
		after := e.attempt(cl.Attempt.AttemptID)
		if after.Phase != api.PhaseActing || after.Version <= before.Version {
			t.Fatalf("after the answer: phase %s version %d (was %d), want acting with a new version", after.Phase, after.Version, before.Version)
		}
	}},
	{"TwoPendingDecisionsRestoreWhenTheLastCloses", func(t *testing.T, e *env) {
		for _, firstAnswered := range []bool{true, false} {
			cl := e.claimed("s-" + map[bool]string{true: "first", false: "second"}[firstAnswered])
			e.setPhase(cl, api.PhaseObserving)
			d1 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
			d2 := e.ask(cl, decisions.Request{Kind: api.DecisionInput})
			a, b := d1, d2
			if !firstAnswered {
				a, b = d2, d1
			}
			e.mustAnswer(a, api.DecisionApproved, `"x"`)
			if p := e.phase(cl); p != api.PhaseAwaitingDecision {
				t.Fatalf("one of two answered: phase %s, want still awaiting_decision", p)
			}
			e.mustAnswer(b, api.DecisionApproved, `"y"`)
			if p := e.phase(cl); p != api.PhaseObserving {
				t.Fatalf("both answered: phase %s, want observing (from before the wait)", p)
			}
		}
	}},
	{"WaitRestoresThePhaseTheHolderSetLast", func(t *testing.T, e *env) {
		// The holder moves on while a decision is pending, then asks another: the wait that
		// ends with both answered started at the second request.
		cl := e.claimed("s")
		e.setPhase(cl, api.PhasePlanning)
		d1 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(time.Millisecond) // "last" is by RequestedAt (milliseconds)
		e.setPhase(cl, api.PhaseActing)
		d2 := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.mustAnswer(d2, api.DecisionApproved, "")
		e.mustAnswer(d1, api.DecisionApproved, "")
		if p := e.phase(cl); p != api.PhaseActing {
			t.Fatalf("phase %s, want acting", p)
		}
	}},
	{"PhaseTheHolderSetDuringTheWaitIsKept", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		e.setPhase(cl, api.PhaseActing)
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.setPhase(cl, api.PhaseCorrecting)
		before := e.attempt(cl.Attempt.AttemptID)
		e.mustAnswer(d, api.DecisionApproved, "")
		if after := e.attempt(cl.Attempt.AttemptID); after.Phase != api.PhaseCorrecting || after.Version != before.Version {
			t.Fatalf("answer moved a phase the holder set: %s (version %d, was %d)", after.Phase, after.Version, before.Version)
		}
	}},
	{"ExpiryRestoresThePhaseOnlyWhenNothingElseIsPending", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		e.setPhase(cl, api.PhaseActing)
		e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: 5 * time.Second})
		waits := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(5 * time.Second)
		if n, err := decisions.ExpirePending(e.Ctx, e.DB); err != nil || n < 1 {
			t.Fatalf("expire: %d %v", n, err)
		}
		if p := e.phase(cl); p != api.PhaseAwaitingDecision {
			t.Fatalf("one expired, one pending: phase %s, want awaiting_decision", p)
		}
		e.mustAnswer(waits, api.DecisionRejected, "")
		if p := e.phase(cl); p != api.PhaseActing {
			t.Fatalf("the other answered: phase %s, want acting", p)
		}

		// Alone, an expiry restores the phase itself.
		cl2 := e.claimed("s2")
		e.setPhase(cl2, api.PhaseObserving)
		e.ask(cl2, decisions.Request{Kind: api.DecisionInput, ExpiresIn: time.Second})
		e.Clock.Advance(time.Second)
		if n, err := decisions.ExpirePending(e.Ctx, e.DB); err != nil || n < 1 {
			t.Fatalf("expire: %d %v", n, err)
		}
		if p := e.phase(cl2); p != api.PhaseObserving {
			t.Fatalf("expired alone: phase %s, want observing", p)
		}
	}},
	{"AnswerTheLastDecisionWhileAnotherHasExpiredByTime", func(t *testing.T, e *env) {
		// An expired-by-time decision no longer holds the attempt, even before the
		// background job marks it.
		cl := e.claimed("s")
		e.setPhase(cl, api.PhasePlanning)
		e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Second})
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(time.Second)
		e.mustAnswer(d, api.DecisionApproved, "")
		if p := e.phase(cl); p != api.PhasePlanning {
			t.Fatalf("phase %s, want planning", p)
		}
	}},
	{"EndedAttemptKeepsItsPhase", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		e.setPhase(cl, api.PhaseActing)
		d := e.ask(cl, decisions.Request{Kind: api.DecisionApproval, ExpiresIn: time.Minute})
		e.Complete(cl)
		ended := e.attempt(cl.Attempt.AttemptID)
		if _, err := e.answer(d, api.DecisionApproved, ""); !apperr.Is(err, api.CodeDecisionClosed) {
			t.Fatalf("answer after the attempt ended: %v, want decision_closed", err)
		}
		e.Clock.Advance(time.Minute)
		if _, err := decisions.ExpirePending(e.Ctx, e.DB); err != nil {
			t.Fatal(err)
		}
		if a := e.attempt(cl.Attempt.AttemptID); a.Phase != api.PhaseAwaitingDecision || a.Version != ended.Version {
			t.Fatalf("ended attempt changed: phase %s version %d (was %d)", a.Phase, a.Version, ended.Version)
		}
	}},
	{"ChoiceAnswerMustBeOneOfItsOptions", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		shapes := []string{
			`["merge", "close", {"id": "defer", "label": "Later"}, {"n": 1.0}]`,
			`{"prompt": "what now?", "choices": ["merge", "close", {"id": "defer", "label": "Later"}, {"n": 1.0}]}`,
		}
		for _, options := range shapes {
			ask := func() decisions.Decision {
				return e.ask(cl, decisions.Request{Kind: api.DecisionChoice, Options: json.RawMessage(options)})
			}
			for _, bad := range []string{`"merged"`, `"MERGE"`, `["merge"]`, `{"n": 2}`, `"label"`, `{"id": "merge"}`} {
				d := ask()
				_, err := e.answer(d, api.DecisionApproved, bad)
				wantField(t, err, "answer")
				if got := e.get(d.DecisionID); got.Status != api.DecisionPending || got.Version != d.Version {
					t.Fatalf("refused answer %s changed the decision: %+v", bad, got)
				}
				if p := e.phase(cl); p != api.PhaseAwaitingDecision {
					t.Fatalf("refused answer moved the phase to %s", p)
				}
				e.mustAnswer(d, api.DecisionRejected, "")
			}
			// Matched by canonical form: by value, by an option's id, or by the whole option.
			for _, good := range []string{`"close"`, `"defer"`, `{"label": "Later", "id": "defer"}`, `{"n": 1}`, `{"n":1e0}`} {
				got := e.mustAnswer(ask(), api.DecisionApproved, good)
				if got.Status != api.DecisionApproved || got.Answer == nil {
					t.Fatalf("answer %s: %+v", good, got)
				}
			}
			_, err := e.answer(ask(), api.DecisionApproved, "")
			wantField(t, err, "answer") // approved needs the choice
			e.mustAnswer(ask(), api.DecisionRejected, "")
			e.mustAnswer(ask(), api.DecisionRejected, `"merge"`)
			_, err = e.answer(ask(), api.DecisionRejected, `"nope"`)
			wantField(t, err, "answer")
		}
	}},
	{"InputApprovedNeedsAnAnswerApprovalTakesAny", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		in := e.ask(cl, decisions.Request{Kind: api.DecisionInput})
		_, err := e.answer(in, api.DecisionApproved, "")
		wantField(t, err, "answer")
		if got := e.get(in.DecisionID); got.Status != api.DecisionPending || got.Version != in.Version {
			t.Fatalf("refused answer changed the decision: %+v", got)
		}
		if got := e.mustAnswer(in, api.DecisionApproved, `{"text":"ship it"}`); string(got.Answer) != `{"text":"ship it"}` {
			t.Fatalf("answer stored as %s", got.Answer)
		}
		e.mustAnswer(e.ask(cl, decisions.Request{Kind: api.DecisionInput}), api.DecisionRejected, "")
		for _, answer := range []string{"", `true`, `{"note":"fine"}`} {
			for _, st := range []api.DecisionStatus{api.DecisionApproved, api.DecisionRejected} {
				e.mustAnswer(e.ask(cl, decisions.Request{Kind: api.DecisionApproval}), st, answer)
			}
		}
		_, err = e.store.Answer(e.Ctx, e.Tenant, in.DecisionID, decisions.Answer{Status: "maybe", KeyID: "k"})
		wantField(t, err, "status")
	}},
	{"ChoiceRequestNeedsAListOfDistinctOptions", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		for _, bad := range []string{``, `[]`, `{"a": 1}`, `{"choices": {}}`, `"a"`, `["a", "a"]`, `[1, 1.0]`,
			`["x", {"id": "x"}]`, `{"choices": []}`} {
			_, err := e.store.Request(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				decisions.Request{Kind: api.DecisionChoice, Options: json.RawMessage(bad)})
			wantField(t, err, "options")
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%d decisions written by refused requests", n)
		}
		// Other kinds keep any options document.
		e.ask(cl, decisions.Request{Kind: api.DecisionApproval, Options: json.RawMessage(`{"a": 1}`)})
		e.ask(cl, decisions.Request{Kind: api.DecisionInput, Options: json.RawMessage(`"free text"`)})
	}},
	{"MalformedStoredOptionsCanOnlyBeRejected", func(t *testing.T, e *env) {
		cl := e.claimed("s")
		d := e.ask(cl, decisions.Request{Kind: api.DecisionChoice, Options: json.RawMessage(`["a"]`)})
		// A choice decision stored before options were checked.
		stamp := ""
		if e.DB.Dialect.Name() == "sqlite" {
			stamp = ", Version = (SELECT Value + 1 FROM RowVersionCounter)" // SQLite's rowversion emulation
		}
		err := e.DB.Write(e.Ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(e.Ctx, tx.Rebind(`UPDATE DecisionRequests SET OptionsJson = ?`+stamp+` WHERE DecisionId = ?`),
				`{"pick":"a"}`, d.DecisionID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []struct {
			status api.DecisionStatus
			answer string
		}{
			{api.DecisionApproved, `"a"`}, {api.DecisionApproved, ""}, {api.DecisionRejected, `"a"`},
		} {
			_, err := e.answer(d, a.status, a.answer)
			wantField(t, err, "answer")
		}
		if got := e.mustAnswer(d, api.DecisionRejected, ""); got.Status != api.DecisionRejected {
			t.Fatalf("rejected: %+v", got)
		}
	}},
	{"InboxItemsNameTheirSourceAndFilterByProject", func(t *testing.T, e *env) {
		if _, _, err := projects.NewStore(e.DB).Put(e.Ctx, e.Tenant, "p2", projects.Change{}); err != nil {
			t.Fatal(err)
		}
		cl1 := e.claimed("review:1")
		spec := runs.Spec{ProjectID: "p2", Subject: "review:2", Kind: "review", AgentID: "agent-2", StepID: uuid.New(),
			SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}
		if _, _, err := e.Svc.Enqueue(e.Ctx, e.Caller, spec); err != nil {
			t.Fatal(err)
		}
		cl2, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
		if err != nil {
			t.Fatal(err)
		}
		d1 := e.ask(cl1, decisions.Request{Kind: api.DecisionApproval})
		e.Clock.Advance(time.Millisecond)
		d2 := e.ask(cl2, decisions.Request{Kind: api.DecisionApproval})
		if d1.RunID != cl1.Run.RunID || d1.ProjectID != "p1" || subject(d1) != "review:1" || d1.AgentID != "agent-1" {
			t.Fatalf("requested decision's source %+v", d1)
		}
		if got := e.get(d2.DecisionID); got.RunID != cl2.Run.RunID || got.ProjectID != "p2" || subject(got) != "review:2" || got.AgentID != "agent-2" {
			t.Fatalf("read decision's source %+v", got)
		}
		list := func(f decisions.ListFilter) []decisions.Decision {
			t.Helper()
			f.Limit = 10
			got, err := e.store.List(e.Ctx, e.Tenant, f)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		all := list(decisions.ListFilter{})
		if !sameIDs(all, d1, d2) || subject(all[1]) != "review:2" || all[0].AgentID != "agent-1" || all[1].RunID != cl2.Run.RunID {
			t.Fatalf("inbox %+v", all)
		}
		if got := list(decisions.ListFilter{ProjectID: ptr("p2")}); !sameIDs(got, d2) || got[0].ProjectID != "p2" {
			t.Fatalf("project p2: %+v", got)
		}
		if got := list(decisions.ListFilter{ProjectID: ptr("p1"), Status: ptr(api.DecisionPending)}); !sameIDs(got, d1) {
			t.Fatalf("project p1, pending: %v", ids(got))
		}
		if got := list(decisions.ListFilter{ProjectID: ptr("p2"), Status: ptr(api.DecisionApproved)}); len(got) != 0 {
			t.Fatalf("project p2, approved: %v", ids(got))
		}
		if got := list(decisions.ListFilter{ProjectID: ptr("nope")}); len(got) != 0 {
			t.Fatalf("unknown project: %v", ids(got))
		}
		// Another tenant with a project of the same name sees none of these.
		o := e.other()
		if got, err := o.store.List(o.Ctx, o.Tenant, decisions.ListFilter{ProjectID: ptr("p1"), Limit: 10}); err != nil || len(got) != 0 {
			t.Fatalf("other tenant's inbox for p1: %v %v", ids(got), err)
		}
	}},
}
