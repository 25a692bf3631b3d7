package history_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func ptr[T any](v T) *T { return &v }

func idsOf(items []history.AttemptItem) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = it.AttemptID
	}
	return out
}

func attemptIDs(cs ...runs.Claimed) []uuid.UUID {
	out := make([]uuid.UUID, len(cs))
	for i, c := range cs {
		out[i] = c.Attempt.AttemptID
	}
	return out
}

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Run("ListNewestFirstAndFilters", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a1 := e.attempt()
			e.clock.Advance(time.Second)
			a2 := e.attempt(agent("agent-2"))
			e.clock.Advance(time.Second)
			a3 := e.attempt(project("p2"))
			e.clock.Advance(time.Second)
			a4 := e.attempt(agent("agent-2"), project("p2"))
			if _, err := e.svc.Complete(e.ctx, e.tenant, a1.Attempt.AttemptID, a1.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				t.Fatal(err)
			}
			zero := time.Duration(0)
			if _, err := e.svc.Release(e.ctx, e.tenant, a3.Attempt.AttemptID, a3.Lease.FencingToken,
				runs.Release{RetryAfter: &zero}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Second)
			a5, err := e.svc.Claim(e.ctx, e.caller, runs.ClaimRequest{HolderID: "h2", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
			if err != nil || a5.Run.RunID != a3.Run.RunID {
				t.Fatalf("re-claim of the released run: %+v %v", a5.Run, err)
			}
			released, running, succeeded := api.AttemptReleased, api.AttemptRunning, api.AttemptSucceeded
			cases := []struct {
				name string
				f    history.Filter
				want []runs.Claimed
			}{
				{"all", history.Filter{}, []runs.Claimed{a5, a4, a3, a2, a1}},
				{"agent", history.Filter{AgentID: ptr("agent-2")}, []runs.Claimed{a4, a2}},
				{"project", history.Filter{ProjectID: ptr("p2")}, []runs.Claimed{a5, a4, a3}},
				{"state running", history.Filter{State: &running}, []runs.Claimed{a5, a4, a2}},
				{"state succeeded", history.Filter{State: &succeeded}, []runs.Claimed{a1}},
				{"state released", history.Filter{State: &released}, []runs.Claimed{a3}},
				{"agent and project", history.Filter{AgentID: ptr("agent-2"), ProjectID: ptr("p2")}, []runs.Claimed{a4}},
				{"started range", history.Filter{StartedFrom: ptr(epoch.Add(time.Second)), StartedTo: ptr(epoch.Add(3 * time.Second))},
					[]runs.Claimed{a3, a2}},
				// Sub-millisecond bounds: from is inclusive and to exclusive at the stored precision.
				{"started from past a row", history.Filter{StartedFrom: ptr(epoch.Add(time.Second + 500*time.Microsecond))},
					[]runs.Claimed{a5, a4, a3}},
				{"started to just past a row", history.Filter{StartedTo: ptr(epoch.Add(time.Second + 500*time.Microsecond))},
					[]runs.Claimed{a2, a1}},
				{"run", history.Filter{RunID: &a3.Run.RunID}, []runs.Claimed{a5, a3}},
				{"run and state", history.Filter{RunID: &a3.Run.RunID, State: &released}, []runs.Claimed{a3}},
				{"run and other project", history.Filter{RunID: &a3.Run.RunID, ProjectID: ptr("p1")}, nil},
				{"unknown run", history.Filter{RunID: ptr(uuid.New())}, nil},
				{"unknown agent", history.Filter{AgentID: ptr("AGENT-2")}, nil},
			}
			for _, c := range cases {
				c.f.Limit = 50
				got, err := e.store.List(e.ctx, e.tenant, c.f)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if want := attemptIDs(c.want...); !slices.Equal(idsOf(got), want) {
					t.Errorf("%s: got %v, want %v", c.name, idsOf(got), want)
				}
			}
			all, err := e.store.List(e.ctx, e.tenant, history.Filter{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range all {
				if it.ETag != it.Version.ETag() || it.Version == 0 {
					t.Fatalf("item %s carries etag %q for version %d", it.AttemptID, it.ETag, it.Version)
				}
			}
		})

		t.Run("PaginationWalksEveryRowOnce", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			// Several attempts share each start time, so the walk depends on the AttemptId
			// half of the keyset.
			for i := range 23 {
				if i%3 == 0 {
					e.clock.Advance(time.Second)
				}
				if i%2 == 0 {
					e.attempt(agent("agent-even"))
				} else {
					e.attempt()
				}
			}
			for _, f := range []history.Filter{{}, {AgentID: ptr("agent-even")}} {
				f.Limit = 500
				whole, err := e.store.List(e.ctx, e.tenant, f)
				if err != nil {
					t.Fatal(err)
				}
				var walked []uuid.UUID
				var after *history.ListCursor
				for pages := 0; ; pages++ {
					if pages > 30 {
						t.Fatal("the walk does not end")
					}
					f.Limit, f.After = 4, after
					page, err := e.store.List(e.ctx, e.tenant, f)
					if err != nil {
						t.Fatal(err)
					}
					walked = append(walked, idsOf(page)...)
					if len(page) < 4 {
						break
					}
					last := page[len(page)-1]
					after = &history.ListCursor{StartedAt: last.StartedAt, AttemptID: last.AttemptID}
				}
				if !slices.Equal(walked, idsOf(whole)) {
					t.Fatalf("walk %v\nwhole %v", walked, idsOf(whole))
				}
				seen := map[uuid.UUID]bool{}
				for i, it := range whole {
					if seen[it.AttemptID] {
						t.Fatalf("attempt %s listed twice", it.AttemptID)
					}
					seen[it.AttemptID] = true
					if i > 0 && it.StartedAt.After(whole[i-1].StartedAt) {
						t.Fatalf("not newest first at %d: %v after %v", i, it.StartedAt, whole[i-1].StartedAt)
					}
				}
				want := 23
				if f.AgentID != nil {
					want = 12
				}
				if len(whole) != want {
					t.Fatalf("listed %d attempts, want %d", len(whole), want)
				}
			}
		})

		t.Run("ChangesInVersionOrderAndContinue", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a1, a2, a3 := e.attempt(), e.attempt(), e.attempt()
			all, err := e.store.Changes(e.ctx, e.tenant, history.ChangesCursor{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			if want := attemptIDs(a1, a2, a3); !slices.Equal(idsOf(all), want) {
				t.Fatalf("changes since 0: %v, want %v", idsOf(all), want)
			}
			mark := all[len(all)-1].Version
			if none, err := e.store.Changes(e.ctx, e.tenant, history.ChangesCursor{Version: mark}, 100); err != nil || len(none) != 0 {
				t.Fatalf("changes since the newest version: %v %v", idsOf(none), err)
			}
			// a1 changes, then a4 appears: both after the mark, a1 first.
			if _, err := e.svc.PatchAttempt(e.ctx, e.tenant, a1.Attempt.AttemptID, a1.Lease.FencingToken,
				runs.AttemptPatch{Phase: ptr(api.PhaseActing)}); err != nil {
				t.Fatal(err)
			}
			a4 := e.attempt()
			got, err := e.store.Changes(e.ctx, e.tenant, history.ChangesCursor{Version: mark}, 100)
			if err != nil {
				t.Fatal(err)
			}
			if want := attemptIDs(a1, a4); !slices.Equal(idsOf(got), want) {
				t.Fatalf("changes since the mark: %v, want %v", idsOf(got), want)
			}
			if got[0].Phase != api.PhaseActing || got[0].Version <= mark || got[1].Version <= got[0].Version {
				t.Fatalf("changed rows out of version order or stale: %+v", got)
			}
			// Resuming with the last item's version finds nothing new.
			if rest, err := e.store.Changes(e.ctx, e.tenant, history.ChangesCursor{Version: got[1].Version}, 100); err != nil || len(rest) != 0 {
				t.Fatalf("resume after the last change: %v %v", idsOf(rest), err)
			}
		})

		t.Run("ChangesWalkRowsSharingAVersion", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			var made []runs.Claimed
			for range 5 {
				made = append(made, e.attempt())
			}
			// One statement touches every attempt of the tenant: on SQLite they all get one
			// Version, so only the AttemptId half of the keyset tells them apart.
			bump := map[string]string{
				"sqlite":    `UPDATE ExecutionAttempts SET Version = (SELECT Value + 1 FROM RowVersionCounter) WHERE TenantId = ?1`,
				"sqlserver": `UPDATE dbo.ExecutionAttempts SET Phase = Phase WHERE TenantId = @p1;`,
			}
			err := e.db.Write(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
				_, err := tx.ExecContext(e.ctx, bump[tx.Dialect.Name()], e.tenant)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[uuid.UUID]int{}
			after := history.ChangesCursor{Version: made[len(made)-1].Attempt.Version}
			var prev *history.AttemptItem
			for pages := 0; pages < 20; pages++ {
				page, err := e.store.Changes(e.ctx, e.tenant, after, 2)
				if err != nil {
					t.Fatal(err)
				}
				for i := range page {
					it := page[i]
					seen[it.AttemptID]++
					if prev != nil && it.Version < prev.Version {
						t.Fatalf("version went back: %d after %d", it.Version, prev.Version)
					}
					prev = &it
				}
				if len(page) < 2 {
					break
				}
				last := page[len(page)-1]
				after = history.ChangesCursor{Version: last.Version, AttemptID: &last.AttemptID}
			}
			if len(seen) != 5 {
				t.Fatalf("the walk saw %d of 5 attempts: %v", len(seen), seen)
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("attempt %s seen %d times", id, n)
				}
			}
		})

		t.Run("OtherTenantSeesNothing", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a := e.attempt()
			e.checkpoint(a, 1, epoch)
			other := e.newTenant()
			if got, err := e.store.List(e.ctx, other, history.Filter{Limit: 50}); err != nil || len(got) != 0 {
				t.Fatalf("other tenant's list: %v %v", idsOf(got), err)
			}
			if got, err := e.store.List(e.ctx, other, history.Filter{RunID: &a.Run.RunID, Limit: 50}); err != nil || len(got) != 0 {
				t.Fatalf("other tenant's list by run: %v %v", idsOf(got), err)
			}
			if got, err := e.store.Changes(e.ctx, other, history.ChangesCursor{}, 50); err != nil || len(got) != 0 {
				t.Fatalf("other tenant's changes: %v %v", idsOf(got), err)
			}
			if _, err := e.store.Get(e.ctx, other, a.Attempt.AttemptID); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant's get: %v, want not_found", err)
			}
			if _, err := e.store.Timeline(e.ctx, other, a.Attempt.AttemptID, nil, 50); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant's timeline: %v, want not_found", err)
			}
			if _, err := e.store.Timeline(e.ctx, e.tenant, uuid.New(), nil, 50); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("missing attempt's timeline: %v, want not_found", err)
			}
			got, err := e.store.Get(e.ctx, e.tenant, a.Attempt.AttemptID)
			if err != nil || got.AttemptID != a.Attempt.AttemptID || got.Version != a.Attempt.Version {
				t.Fatalf("owner's get: %+v %v", got, err)
			}
		})

		t.Run("TimelineMergesByTimeKindSequence", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a := e.attempt()
			noise := e.attempt() // another attempt's entries never show
			t0 := epoch.Add(10 * time.Second)
			e.checkpoint(noise, 1, t0)
			e.decision(noise, t0)
			type want struct {
				kind string
				id   uuid.UUID
				seq  int
			}
			cp2 := e.checkpoint(a, 2, t0)
			cp1 := e.checkpoint(a, 1, t0)
			call1 := e.call(a, 1, t0)
			dec0 := e.decision(a, t0)
			del0 := e.delegation(a, t0)
			call2 := e.call(a, 2, t0.Add(-time.Second))
			cp3 := e.checkpoint(a, 3, t0.Add(time.Second))
			del1 := e.delegation(a, t0.Add(time.Second))
			decEarly := e.decision(a, t0.Add(-2*time.Second))
			expected := []want{
				{"decision", decEarly, 0}, {"call", call2, 2}, {"checkpoint", cp1, 1}, {"checkpoint", cp2, 2},
				{"call", call1, 1}, {"decision", dec0, 0}, {"delegation", del0, 0}, {"checkpoint", cp3, 3},
				{"delegation", del1, 0},
			}
			check := func(name string, got []history.TimelineEntry) {
				t.Helper()
				if len(got) != len(expected) {
					t.Fatalf("%s: %d entries, want %d: %+v", name, len(got), len(expected), got)
				}
				for i, w := range expected {
					g := got[i]
					if g.Kind.String() != w.kind || g.ID != w.id {
						t.Fatalf("%s: entry %d is %s %s, want %s %s", name, i, g.Kind, g.ID, w.kind, w.id)
					}
					hasSeq := w.kind == "checkpoint" || w.kind == "call"
					if hasSeq != (g.Sequence != nil) || (hasSeq && *g.Sequence != w.seq) {
						t.Fatalf("%s: entry %d sequence %v, want %d", name, i, g.Sequence, w.seq)
					}
				}
			}
			whole, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			check("one page", whole)
			var walked []history.TimelineEntry
			var after *history.TimelineCursor
			for pages := 0; pages < 20; pages++ {
				page, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, after, 2)
				if err != nil {
					t.Fatal(err)
				}
				walked = append(walked, page...)
				if len(page) < 2 {
					break
				}
				c := page[len(page)-1].Cursor()
				after = &c
			}
			check("walk by 2", walked)
			cp, ok := whole[2].Item.(history.Checkpoint)
			if !ok || cp.CheckpointID != cp1 || cp.Sequence != 1 || cp.Phase != api.PhaseActing || !cp.CreatedAt.Equal(t0) {
				t.Fatalf("checkpoint item: %#v", whole[2].Item)
			}
			d, ok := whole[0].Item.(history.Decision)
			if !ok || string(d.Options) != `{"options":["a","b"]}` || string(d.Answer) != `{"pick":"a"}` || d.Status != "approved" {
				t.Fatalf("decision item: %#v", whole[0].Item)
			}
			if !whole[0].At.Equal(t0.Add(-2 * time.Second)) {
				t.Fatalf("entry time %v, want %v", whole[0].At, t0.Add(-2*time.Second))
			}
			empty, err := e.store.Timeline(e.ctx, e.tenant, e.attempt().Attempt.AttemptID, nil, 10)
			if err != nil || len(empty) != 0 {
				t.Fatalf("timeline of an attempt with no entries: %v %v", empty, err)
			}
		})

		t.Run("TimelineEndsWithHowTheAttemptEnded", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a := e.attempt()
			t0 := epoch.Add(10 * time.Second)
			cp := e.checkpoint(a, 1, t0)
			call := e.call(a, 1, t0)
			running, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 10)
			if err != nil || len(running) != 2 {
				t.Fatalf("a running attempt's timeline has no end: %+v %v", running, err)
			}
			e.clock.Advance(20 * time.Second)
			if _, err := e.svc.Complete(e.ctx, e.tenant, a.Attempt.AttemptID, a.Lease.FencingToken, runs.Completion{
				State: api.AttemptFailed, Error: &attempts.Failure{Code: "tool_failed", Message: "no answer"}}); err != nil {
				t.Fatal(err)
			}
			whole, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 10)
			if err != nil || len(whole) != 3 || whole[0].ID != cp || whole[1].ID != call {
				t.Fatalf("timeline %+v %v", whole, err)
			}
			end := whole[2].Wire()
			got, err := end.Decode()
			if err != nil {
				t.Fatal(err)
			}
			ae, ok := got.(*api.AttemptEnd)
			if end.Kind != api.TimelineEnd || end.ID != a.Attempt.AttemptID || !ok || ae.State != api.AttemptFailed ||
				ae.Error == nil || ae.Error.Code != "tool_failed" || ae.FencingToken != a.Lease.FencingToken ||
				!end.At.Equal(epoch.Add(20*time.Second)) {
				t.Fatalf("end entry %+v %+v", end, got)
			}
			// Walked one by one, the end comes once, last.
			var walked []api.TimelineKind
			var after *history.TimelineCursor
			for range 10 {
				page, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, after, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				walked = append(walked, page[0].Kind)
				c := page[0].Cursor()
				after = &c
			}
			if want := []api.TimelineKind{api.TimelineCheckpoint, api.TimelineCall, api.TimelineEnd}; !slices.Equal(walked, want) {
				t.Fatalf("walk %v, want %v", walked, want)
			}
			// A lost attempt's end names its lease and epoch.
			lost := e.attempt()
			e.clock.Advance(time.Hour)
			if _, err := e.svc.Reap(e.ctx); err != nil {
				t.Fatal(err)
			}
			tl, err := e.store.Timeline(e.ctx, e.tenant, lost.Attempt.AttemptID, nil, 10)
			if err != nil || len(tl) != 1 {
				t.Fatalf("lost timeline %+v %v", tl, err)
			}
			got, _ = tl[0].Wire().Decode()
			if ae, ok := got.(*api.AttemptEnd); !ok || ae.State != api.AttemptLost || ae.LeaseID != lost.Lease.LeaseID ||
				ae.FencingToken != lost.Lease.FencingToken || ae.Error == nil || ae.Error.Code != runs.ErrorLeaseLost {
				t.Fatalf("lost end %+v", got)
			}
		})

		t.Run("TimelineReadsADecisionAsGetDoes", func(t *testing.T) {
			// One read rule: a pending decision past its ExpiresAt is expired in the timeline
			// exactly when GET /v1/decisions/{id} says so, before the background job marks it.
			t.Parallel()
			e := newEnv(t, tgt)
			a := e.attempt()
			ds := decisions.NewStore(e.db, e.svc)
			d, err := ds.Request(e.ctx, e.tenant, a.Attempt.AttemptID, a.Lease.FencingToken,
				decisions.Request{Kind: api.DecisionApproval, ExpiresIn: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				advance time.Duration
				want    api.DecisionStatus
			}{{0, api.DecisionPending}, {5 * time.Second, api.DecisionExpired}} {
				e.clock.Advance(step.advance)
				got, err := ds.Get(e.ctx, e.tenant, d.DecisionID)
				if err != nil {
					t.Fatal(err)
				}
				tl, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 10)
				if err != nil || len(tl) != 1 {
					t.Fatalf("timeline %+v %v", tl, err)
				}
				item, ok := tl[0].Item.(history.Decision)
				if !ok || got.Status != step.want || item.Status != step.want || item.Version != got.Version ||
					item.RunID != a.Run.RunID || item.Subject == nil || got.Subject == nil || *item.Subject != *got.Subject || item.ProjectID != "p1" {
					t.Fatalf("after %s: GET says %s, the timeline %#v; want both %s", step.advance, got.Status, tl[0].Item, step.want)
				}
			}
		})

		t.Run("TimelineTiesOrderById", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tgt)
			a := e.attempt()
			at := epoch.Add(time.Minute)
			var decisions []uuid.UUID
			for range 5 {
				decisions = append(decisions, e.decision(a, at))
			}
			whole, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, nil, 100)
			if err != nil || len(whole) != 5 {
				t.Fatalf("timeline: %d entries, %v", len(whole), err)
			}
			var walked []uuid.UUID
			var after *history.TimelineCursor
			for range 10 {
				page, err := e.store.Timeline(e.ctx, e.tenant, a.Attempt.AttemptID, after, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				walked = append(walked, page[0].ID)
				c := page[0].Cursor()
				after = &c
			}
			got := make([]uuid.UUID, len(whole))
			for i, w := range whole {
				got[i] = w.ID
			}
			if !slices.Equal(walked, got) {
				t.Fatalf("walk %v, one page %v", walked, got)
			}
			slices.SortFunc(decisions, func(x, y uuid.UUID) int { return compareUUID(x, y) })
			sorted := slices.Clone(got)
			slices.SortFunc(sorted, func(x, y uuid.UUID) int { return compareUUID(x, y) })
			if !slices.Equal(sorted, decisions) {
				t.Fatalf("timeline holds %v, want the decisions %v", got, decisions)
			}
		})
	})
}

func compareUUID(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) }
