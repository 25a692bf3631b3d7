package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/runs"
)

// TestListEnded (issue 29 item 2): the attempts ended in a window, newest end first, with
// the filters the attempt insights group by, exactly the rows those insights count (a
// running attempt and one ended outside the window are left out, one started before the
// window and ended in it is in), walked page by page without a row lost or repeated.
func TestListEnded(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newEnv(t, tgt)
		complete := func(a runs.Claimed, st api.AttemptState, code string) {
			t.Helper()
			c := runs.Completion{State: st}
			if code != "" {
				c.Error = &attempts.Failure{Code: code, Message: "because"}
			}
			if _, err := e.svc.Complete(e.ctx, e.tenant, a.Attempt.AttemptID, a.Lease.FencingToken, c); err != nil {
				t.Fatal(err)
			}
		}
		before := e.attempt() // ends before the window
		complete(before, api.AttemptSucceeded, "")
		e.clock.Advance(time.Minute)
		from := e.clock.Now()
		long := e.attempt(agent("agent-2")) // starts with the window, ends in it late
		e.clock.Advance(time.Second)
		a1 := e.attempt()
		a2 := e.attempt(project("p2"))
		a3 := e.attempt(agent("agent-2"))
		running := e.attempt()
		e.clock.Advance(time.Second)
		complete(a1, api.AttemptFailed, "tool_timeout")
		complete(a2, api.AttemptFailed, "bad_input")
		zero := time.Duration(0)
		if _, err := e.svc.Release(e.ctx, e.tenant, a3.Attempt.AttemptID, a3.Lease.FencingToken,
			runs.Release{RetryAfter: &zero}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		complete(long, api.AttemptCancelled, "")
		// The lost lease: the reaper takes back an expired lease, ending its attempt lost.
		lost := e.attempt(project("p2"))
		e.clock.Advance(time.Hour)
		if _, err := e.svc.Reap(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		to := e.clock.Now() // exclusive: the reap's end time is in the window
		after := e.attempt()
		complete(after, api.AttemptSucceeded, "")

		// Every attempt still running at the reap (running, re-claimed a3) was lost there.
		failed, lostState, released := api.AttemptFailed, api.AttemptLost, api.AttemptReleased
		window := func(f history.EndedFilter) history.EndedFilter { f.From, f.To = &from, &to; return f }
		all, err := e.store.ListEnded(e.ctx, e.tenant, window(history.EndedFilter{Limit: 100}))
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range all {
			if it.EndedAt == nil || it.EndedAt.Before(from) || !it.EndedAt.Before(to) || it.State == api.AttemptRunning {
				t.Fatalf("item %d %s ended %v in state %s, outside [%v, %v)", i, it.AttemptID, it.EndedAt, it.State, from, to)
			}
			if i > 0 && it.EndedAt.After(*all[i-1].EndedAt) {
				t.Fatalf("items not newest end first: %v after %v", it.EndedAt, all[i-1].EndedAt)
			}
			if it.ETag == "" || it.ETag != it.Version.ETag() {
				t.Fatalf("item %s carries etag %q", it.AttemptID, it.ETag)
			}
		}
		ids := func(items []history.AttemptItem) []uuid.UUID { return idsOf(items) }
		has := func(items []history.AttemptItem, want ...runs.Claimed) bool {
			for _, w := range want {
				if !slices.Contains(ids(items), w.Attempt.AttemptID) {
					return false
				}
			}
			return true
		}
		if !has(all, long, a1, a2, a3, running, lost) || has(all, before) || has(all, after) {
			t.Fatalf("the window lists %v", ids(all))
		}
		cases := []struct {
			name string
			f    history.EndedFilter
			want []runs.Claimed
		}{
			{"failed", history.EndedFilter{State: &failed}, []runs.Claimed{a2, a1}},
			{"released", history.EndedFilter{State: &released}, []runs.Claimed{a3}},
			{"error code", history.EndedFilter{ErrorCode: ptr("tool_timeout")}, []runs.Claimed{a1}},
			{"agent and state", history.EndedFilter{AgentID: ptr("agent-2"), State: &released}, []runs.Claimed{a3}},
			{"project lost", history.EndedFilter{ProjectID: ptr("p2"), State: &lostState}, []runs.Claimed{lost}},
			{"agent lost", history.EndedFilter{AgentID: ptr("agent-1"), State: &lostState}, []runs.Claimed{lost, running}},
			{"release", history.EndedFilter{ReleaseID: ptr("rel"), State: &failed}, []runs.Claimed{a2, a1}},
			{"other release", history.EndedFilter{ReleaseID: ptr("other")}, nil},
			{"kind", history.EndedFilter{Kind: ptr("review"), State: &failed}, []runs.Claimed{a2, a1}},
			{"other kind", history.EndedFilter{Kind: ptr("triage")}, nil},
		}
		for _, c := range cases {
			f := window(c.f)
			f.Limit = 100
			got, err := e.store.ListEnded(e.ctx, e.tenant, f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if want := attemptIDs(c.want...); !slices.Equal(ids(got), want) && !(len(want) == 0 && len(got) == 0) {
				t.Errorf("%s: got %v, want %v", c.name, ids(got), want)
			}
		}
		// Pages of two walk the window's attempts once each, in the order of the whole.
		var walked []uuid.UUID
		var cur *history.ListCursor
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("the walk does not end")
			}
			page, err := e.store.ListEnded(e.ctx, e.tenant, window(history.EndedFilter{Limit: 2, After: cur}))
			if err != nil {
				t.Fatal(err)
			}
			walked = append(walked, ids(page)...)
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			cur = &history.ListCursor{StartedAt: *last.EndedAt, AttemptID: last.AttemptID}
		}
		if !slices.Equal(walked, ids(all)) {
			t.Fatalf("walk %v\nwhole %v", walked, ids(all))
		}
		// Another tenant sees none of them.
		if got, err := e.store.ListEnded(e.ctx, e.newTenant(), window(history.EndedFilter{Limit: 100})); err != nil || len(got) != 0 {
			t.Fatalf("another tenant lists %d attempts, %v", len(got), err)
		}
	})
}
