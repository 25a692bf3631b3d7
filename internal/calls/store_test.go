package calls_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range storeCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newEnv(t, tgt))
			})
		}
	})
}

var storeCases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"EndedAttemptAbandonsItsOpenCalls", func(t *testing.T, e *env) {
		// Every way an attempt ends: the holder completes (as succeeded, or as cancelled after
		// a cancel request), releases, or loses the lease to the reaper.
		ends := []struct {
			name string
			end  func(cl runs.Claimed)
		}{
			{"complete", func(cl runs.Claimed) { e.Complete(cl) }},
			{"complete cancelled", func(cl runs.Claimed) {
				if _, err := e.Svc.Cancel(e.Ctx, e.Tenant, cl.Run.RunID); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Svc.Complete(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
					runs.Completion{State: api.AttemptCancelled}); err != nil {
					t.Fatal(err)
				}
			}},
			{"release", func(cl runs.Claimed) { e.Release(cl) }},
			{"lost", func(cl runs.Claimed) {
				e.Clock.Advance((apitest.LeaseSeconds + 1) * time.Second)
				if res, err := e.Svc.Reap(e.Ctx); err != nil || res.TakenBack != 1 {
					t.Fatalf("reap: %+v %v", res, err)
				}
			}},
		}
		for _, end := range ends {
			cl := e.Lease()
			open := e.record(cl, call(0, "r0"))
			done := e.record(cl, call(1, "r1"))
			done, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, done.CallID, cl.Lease.FencingToken,
				calls.Finish{Status: api.CallDenied})
			if err != nil {
				t.Fatal(err)
			}
			// Another running attempt of the tenant, on a lease that outlives the reaper's pass.
			e.Enqueue()
			bystander, err := e.Svc.Claim(e.Ctx, e.Caller, runs.ClaimRequest{HolderID: "holder-2", ReleaseID: "rel-1",
				AdapterVersion: "1.0", ModelProfileID: "model-a", LeaseSeconds: 3600})
			if err != nil {
				t.Fatal(err)
			}
			kept := e.record(bystander, call(0, "r0"))
			e.Clock.Advance(time.Second)
			end.end(cl)
			endedAt := e.Clock.Now() // the clock moves only when the test says so

			got := e.get(cl, open.CallID)
			if got.Status != api.CallAbandoned || got.EndedAt == nil || !got.EndedAt.Equal(endedAt) || got.Version <= open.Version ||
				got.Sequence != open.Sequence || got.RequestHash != open.RequestHash || !got.StartedAt.Equal(open.StartedAt) {
				t.Fatalf("%s: open call after the attempt ended %+v, want abandoned at %s", end.name, got, endedAt)
			}
			if g := e.get(cl, done.CallID); g.Status != api.CallDenied || g.Version != done.Version || !g.EndedAt.Equal(*done.EndedAt) {
				t.Fatalf("%s: finished call changed: %+v, was %+v", end.name, g, done)
			}
			if g := e.get(bystander, kept.CallID); g.Status != api.CallStarted || g.Version != kept.Version {
				t.Fatalf("%s: another attempt's call changed: %+v", end.name, g)
			}
			// The holder can no longer finish it: the fence refuses, and nothing changes.
			if _, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, open.CallID, cl.Lease.FencingToken,
				calls.Finish{Status: api.CallSucceeded}); err == nil || apperr.CodeOf(err) == api.CodeInternal {
				t.Fatalf("%s: finishing an abandoned call: %v, want a fence refusal", end.name, err)
			}
			if g := e.get(cl, open.CallID); g.Status != api.CallAbandoned || g.Version != got.Version {
				t.Fatalf("%s: refused finish changed the call: %+v", end.name, g)
			}
			e.Complete(bystander)
		}
		// Another tenant's attempt ending does not touch this tenant's calls.
		o := e.other(t)
		mine := e.Lease()
		c := e.record(mine, call(0, "r0"))
		theirs := o.Lease()
		o.record(theirs, call(0, "r0"))
		o.Complete(theirs)
		if g := e.get(mine, c.CallID); g.Status != api.CallStarted || g.Version != c.Version {
			t.Fatalf("another tenant's ended attempt changed this tenant's call: %+v", g)
		}
	}},
	{"FencedRecordStartsTheCall", func(t *testing.T, e *env) {
		cl := e.Lease()
		policy := uuid.New()
		n := call(0, "r0")
		n.Kind, n.PolicyDecisionID = api.CallModel, &policy
		c := e.record(cl, n)
		if c.CallID == uuid.Nil || c.AttemptID != cl.Attempt.AttemptID || c.Sequence != 0 || c.Kind != api.CallModel ||
			c.Target != n.Target || c.RequestHash != "r0" || c.Status != api.CallStarted || !c.StartedAt.Equal(epoch) ||
			c.EndedAt != nil || c.ReceiptRef != nil || c.Version == 0 || !c.PolicyDecisionID.Valid || c.PolicyDecisionID.UUID != policy {
			t.Fatalf("recorded %+v", c)
		}
		if got := e.get(cl, c.CallID); got.CallID != c.CallID || got.Version != c.Version || got.PolicyDecisionID != c.PolicyDecisionID ||
			!got.StartedAt.Equal(c.StartedAt) {
			t.Fatalf("read back %+v, want %+v", got, c)
		}
		if c2 := e.record(cl, call(1, "r1")); c2.PolicyDecisionID.Valid || c2.Version <= c.Version {
			t.Fatalf("second call %+v: want no policy decision and a greater version", c2)
		}
		// A call of another attempt in the path is not found.
		other := e.Lease()
		if _, err := e.store.Get(e.Ctx, e.Tenant, other.Attempt.AttemptID, c.CallID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("read through another attempt: got %v, want not_found", err)
		}
	}},

	{"RepeatAnswersStoredRowAndOtherHashConflicts", func(t *testing.T, e *env) {
		cl := e.Lease()
		first := e.record(cl, call(4, "req-a"))
		e.Clock.Advance(time.Second)
		again, created, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(4, "req-a"))
		if err != nil || created || again.CallID != first.CallID || again.Version != first.Version || !again.StartedAt.Equal(epoch) {
			t.Fatalf("repeat: created=%v err=%v got %+v, want the first row", created, err, again)
		}
		for _, hash := range []string{"req-b", "REQ-A"} {
			_, _, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(4, hash))
			if !apperr.Is(err, api.CodeSequenceConflict) {
				t.Fatalf("hash %q: got %v, want sequence_conflict", hash, err)
			}
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 1 || cs[0].RequestHash != "req-a" {
			t.Fatalf("stored %+v, want the first call alone", cs)
		}
	}},

	{"RepeatsAfterLeaseEndedStillAnswer", func(t *testing.T, e *env) {
		cl := e.Lease()
		c := e.record(cl, call(0, "r"))
		done, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
			calls.Finish{Status: api.CallSucceeded, ReceiptRef: ptr("receipt://1")})
		if err != nil {
			t.Fatal(err)
		}
		e.Complete(cl)
		// The record repeat answers the row as it now is (finished).
		again, created, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(0, "r"))
		if err != nil || created || again.CallID != c.CallID || again.Status != api.CallSucceeded || again.Version != done.Version {
			t.Fatalf("record repeat after complete: created=%v err=%v %+v", created, err, again)
		}
		fin, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
			calls.Finish{Status: api.CallSucceeded, ReceiptRef: ptr("receipt://1")})
		if err != nil || fin.Version != done.Version {
			t.Fatalf("finish repeat after complete: %+v %v", fin, err)
		}
		// A repeat must present the attempt's token; another token goes to the fence.
		_, _, err = e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken+1, call(0, "r"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("record repeat with another token: got %v, want stale_lease", err)
		}
		_, err = e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken+1,
			calls.Finish{Status: api.CallSucceeded, ReceiptRef: ptr("receipt://1")})
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("finish repeat with another token: got %v, want stale_lease", err)
		}
		_, _, err = e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(1, "r"))
		if !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("new record after complete: got %v, want attempt_ended", err)
		}
	}},

	{"StaleFenceRefusedAndNothingWritten", func(t *testing.T, e *env) {
		old := e.Lease()
		e.record(old, call(0, "r"))
		e.Release(old)
		c := e.all(old.Attempt.AttemptID)[0] // abandoned by the release
		cur := e.Claim()
		if cur.Run.RunID != old.Run.RunID {
			t.Fatalf("reclaimed another run")
		}
		_, _, err := e.store.Record(e.Ctx, e.Tenant, old.Attempt.AttemptID, old.Lease.FencingToken, call(1, "r"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("record on the old attempt: got %v, want stale_lease", err)
		}
		_, _, err = e.store.Record(e.Ctx, e.Tenant, cur.Attempt.AttemptID, old.Lease.FencingToken, call(0, "r"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("record on the new attempt with the old token: got %v, want stale_lease", err)
		}
		_, err = e.store.FinishCall(e.Ctx, e.Tenant, old.Attempt.AttemptID, c.CallID, old.Lease.FencingToken, calls.Finish{Status: api.CallFailed})
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("finish on the old attempt: got %v, want stale_lease", err)
		}
		if got := e.get(old, c.CallID); got.Status != api.CallAbandoned || got.Version != c.Version || !got.EndedAt.Equal(*c.EndedAt) {
			t.Fatalf("refused finish changed the call: %+v, was %+v", got, c)
		}
		if cs := e.all(old.Attempt.AttemptID); len(cs) != 1 {
			t.Fatalf("old attempt has %d calls, want 1", len(cs))
		}
		if cs := e.all(cur.Attempt.AttemptID); len(cs) != 0 {
			t.Fatalf("refused record wrote %+v", cs)
		}
	}},

	{"ExpiredFenceRefusedAndNothingWritten", func(t *testing.T, e *env) {
		cl := e.Lease()
		c := e.record(cl, call(0, "r"))
		e.Clock.Advance(apitest.LeaseSeconds * time.Second)
		_, _, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(1, "r"))
		if !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("record at the lease's end: got %v, want lease_expired", err)
		}
		_, err = e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, calls.Finish{Status: api.CallSucceeded})
		if !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("finish at the lease's end: got %v, want lease_expired", err)
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 1 || cs[0].Status != api.CallStarted || cs[0].Version != c.Version {
			t.Fatalf("stored %+v, want the started call alone, unchanged", cs)
		}
	}},

	{"FinishSetsStatusReceiptAndEnd", func(t *testing.T, e *env) {
		cl := e.Lease()
		c := e.record(cl, call(0, "r"))
		e.Clock.Advance(2 * time.Second)
		f := calls.Finish{Status: api.CallDenied, ReceiptRef: ptr("receipt://denied/1")}
		done, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f)
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != api.CallDenied || done.ReceiptRef == nil || *done.ReceiptRef != "receipt://denied/1" ||
			done.EndedAt == nil || !done.EndedAt.Equal(epoch.Add(2*time.Second)) || done.Version <= c.Version ||
			!done.StartedAt.Equal(c.StartedAt) || done.RequestHash != c.RequestHash {
			t.Fatalf("finished %+v", done)
		}
		e.Clock.Advance(time.Second)
		again, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f)
		if err != nil || again.Version != done.Version || !again.EndedAt.Equal(*done.EndedAt) {
			t.Fatalf("repeat finish: %+v %v, want the stored row unchanged", again, err)
		}
		for _, other := range []calls.Finish{
			{Status: api.CallFailed, ReceiptRef: ptr("receipt://denied/1")},
			{Status: api.CallDenied, ReceiptRef: ptr("receipt://other")},
			{Status: api.CallDenied},
		} {
			_, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, other)
			if !apperr.Is(err, api.CodeIllegalTransition) {
				t.Fatalf("another finish %+v: got %v, want illegal_transition", other, err)
			}
		}
		if got := e.get(cl, c.CallID); got.Version != done.Version || got.Status != api.CallDenied {
			t.Fatalf("refused finishes changed the call: %+v", got)
		}
		// A finish without a receipt stores none.
		c2 := e.record(cl, call(1, "r"))
		if d2, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c2.CallID, cl.Lease.FencingToken,
			calls.Finish{Status: api.CallFailed}); err != nil || d2.ReceiptRef != nil || d2.Status != api.CallFailed {
			t.Fatalf("finish without receipt: %+v %v", d2, err)
		}
	}},

	{"FinishHonoursIfMatch", func(t *testing.T, e *env) {
		cl := e.Lease()
		c := e.record(cl, call(0, "r"))
		stale := c.Version - 1
		f := calls.Finish{Status: api.CallSucceeded, IfMatch: &stale}
		if _, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f); !apperr.Is(err, api.CodePreconditionFailed) {
			t.Fatalf("stale If-Match: got %v, want precondition_failed", err)
		}
		if got := e.get(cl, c.CallID); got.Status != api.CallStarted || got.Version != c.Version {
			t.Fatalf("refused finish changed the call: %+v", got)
		}
		v := c.Version
		f.IfMatch = &v
		done, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f)
		if err != nil || done.Status != api.CallSucceeded {
			t.Fatalf("current If-Match: %+v %v", done, err)
		}
		// A retry of the same request (same, now old, If-Match) answers as the first did.
		again, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f)
		if err != nil || again.Version != done.Version {
			t.Fatalf("retried finish: %+v %v, want the stored row", again, err)
		}
		// Another finish with the old ETag fails the precondition first.
		other := calls.Finish{Status: api.CallFailed, IfMatch: &v}
		if _, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, other); !apperr.Is(err, api.CodePreconditionFailed) {
			t.Fatalf("another finish with an old ETag: got %v, want precondition_failed", err)
		}
	}},

	{"FinishOfUnknownCallIsNotFound", func(t *testing.T, e *env) {
		cl := e.Lease()
		c := e.record(cl, call(0, "r"))
		other := e.Lease()
		for name, ids := range map[string][2]uuid.UUID{
			"missing call":             {cl.Attempt.AttemptID, uuid.New()},
			"call of another attempt":  {other.Attempt.AttemptID, c.CallID},
			"missing attempt and call": {uuid.New(), uuid.New()},
		} {
			_, err := e.store.FinishCall(e.Ctx, e.Tenant, ids[0], ids[1], cl.Lease.FencingToken, calls.Finish{Status: api.CallSucceeded})
			if !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("%s: got %v, want not_found", name, err)
			}
		}
		if got := e.get(cl, c.CallID); got.Status != api.CallStarted {
			t.Fatalf("call changed: %+v", got)
		}
	}},

	{"OtherTenantGets404AndCannotWrite", func(t *testing.T, e *env) {
		cl := e.Lease()
		mine := e.record(cl, call(0, "r"))
		o := e.other(t)
		id, token := cl.Attempt.AttemptID, cl.Lease.FencingToken
		for _, n := range []calls.Draft{call(0, "r"), call(0, "other"), call(1, "r")} {
			if _, _, err := o.store.Record(o.Ctx, o.Tenant, id, token, n); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant records sequence %d: got %v, want not_found", n.Sequence, err)
			}
		}
		if _, err := o.store.FinishCall(o.Ctx, o.Tenant, id, mine.CallID, token, calls.Finish{Status: api.CallFailed}); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant finishes: got %v, want not_found", err)
		}
		if _, err := o.store.List(o.Ctx, o.Tenant, id, calls.Start, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant lists: got %v, want not_found", err)
		}
		if _, err := o.store.Get(o.Ctx, o.Tenant, id, mine.CallID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant reads: got %v, want not_found", err)
		}
		if cs := e.all(id); len(cs) != 1 || cs[0].Status != api.CallStarted || cs[0].Version != mine.Version {
			t.Fatalf("owner's calls changed: %+v", cs)
		}
	}},

	{"ConcurrentDuplicatesResolveToOneRow", func(t *testing.T, e *env) {
		cl := e.Lease()
		const n = 8
		type result struct {
			c       calls.Call
			created bool
			err     error
		}
		run := func(seq int, hash func(int) string) []result {
			out := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					c, created, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, call(seq, hash(i)))
					out[i] = result{c, created, err}
				})
			}
			wg.Wait()
			return out
		}
		created := 0
		same := run(0, func(int) string { return "same" })
		for _, r := range same {
			if r.err != nil || r.c.CallID != same[0].c.CallID {
				t.Fatalf("duplicate record: %+v, want the one row", r)
			}
			if r.created {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d records created the row, want 1", created)
		}
		created = 0
		for _, r := range run(1, func(i int) string { return string(rune('a' + i)) }) {
			switch {
			case r.err == nil && r.created:
				created++
			case !apperr.Is(r.err, api.CodeSequenceConflict):
				t.Fatalf("conflicting record: created=%v err=%v", r.created, r.err)
			}
		}
		if created != 1 {
			t.Fatalf("%d conflicting records created a row, want 1", created)
		}
		// Concurrent finishes: the same finish from every goroutine ends it once.
		c := e.get(cl, same[0].c.CallID)
		var wg sync.WaitGroup
		versions := make([]uint64, n)
		for i := range n {
			wg.Go(func() {
				d, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
					calls.Finish{Status: api.CallSucceeded, ReceiptRef: ptr("rc")})
				if err != nil {
					t.Errorf("concurrent finish: %v", err)
				}
				versions[i] = uint64(d.Version)
			})
		}
		wg.Wait()
		for _, v := range versions {
			if v != versions[0] {
				t.Fatalf("concurrent finishes answered versions %v, want one", versions)
			}
		}
		if got := sequences(e.all(cl.Attempt.AttemptID)); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("stored sequences %v, want [0 1]", got)
		}
	}},

	{"InvalidInputRefusedAndNothingWritten", func(t *testing.T, e *env) {
		cl := e.Lease()
		bad := map[string]func(*calls.Draft){
			"sequence":     func(n *calls.Draft) { n.Sequence = -1 },
			"sequence max": func(n *calls.Draft) { n.Sequence = 1 << 31 },
			"kind":         func(n *calls.Draft) { n.Kind = 4 },
			"target":       func(n *calls.Draft) { n.Target = "" },
			// 65 runes, 130 UTF-16 code units: over nvarchar(128).
			"request hash": func(n *calls.Draft) { n.RequestHash = strings.Repeat("\U0001F600", 65) },
		}
		for name, mut := range bad {
			n := call(0, "r")
			mut(&n)
			if _, _, err := e.store.Record(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("%s: got %v, want invalid_request", name, err)
			}
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 0 {
			t.Fatalf("invalid records wrote %+v", cs)
		}
		c := e.record(cl, call(1<<31-1, "r"))
		for _, f := range []calls.Finish{{Status: api.CallStarted}, {Status: "done"}, {Status: api.CallFailed, ReceiptRef: ptr("")}} {
			if _, err := e.store.FinishCall(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken, f); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("finish %+v: got %v, want invalid_request", f, err)
			}
		}
		if got := e.get(cl, c.CallID); got.Status != api.CallStarted || got.Version != c.Version {
			t.Fatalf("invalid finishes changed the call: %+v", got)
		}
	}},

	{"ListPagesInSequenceOrder", func(t *testing.T, e *env) {
		cl := e.Lease()
		for _, seq := range []int{2, 4, 0, 3, 1} {
			e.record(cl, call(seq, "r"))
		}
		id := cl.Attempt.AttemptID
		for _, p := range []struct {
			after int
			want  []int
		}{{calls.Start, []int{0, 1}}, {1, []int{2, 3}}, {3, []int{4}}, {4, []int{}}} {
			page, err := e.store.List(e.Ctx, e.Tenant, id, p.after, 2)
			if err != nil || !slices.Equal(sequences(page), p.want) {
				t.Fatalf("after %d: %v %v, want %v", p.after, sequences(page), err, p.want)
			}
		}
		if _, err := e.store.List(e.Ctx, e.Tenant, uuid.New(), calls.Start, 2); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
	}},
}
