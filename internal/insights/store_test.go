package insights_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/retention"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)

// history is the scripted world of the store cases: a tenant whose runs, attempts, calls
// and decisions happened at known times (the injected clock), and a second tenant with
// history of its own that no answer may count.
type history struct {
	*apitest.Env
	calls *calls.Store
	dec   *decisions.Store
	// onStep, when set, runs before each step of the script moves the clock.
	onStep func()
	// projector, when set, is the projector project runs (else batches of 3 rows); steps
	// and catchUps count project's steps and calls.
	projector       func() *insights.Projector
	steps, catchUps int
}

func newHistory(t *testing.T, tgt dbtest.Target) *history {
	t.Helper()
	e := apitest.NewEnvWith(t, tgt, apitest.EnvConfig{Epoch: epoch, Logger: apitest.Quiet(),
		Hooks: []runs.Hooks{decisions.Hooks(), calls.Hooks()}})
	return &history{Env: e, calls: calls.NewStore(e.DB, e.Svc), dec: decisions.NewStore(e.DB, e.Svc)}
}

// project brings the roll-ups up to every committed change, as the service's projector
// does in the background, in small batches so a script's rows span several steps.
func (h *history) project() {
	h.T.Helper()
	p := insights.NewProjector(h.DB, 3)
	if h.projector != nil {
		p = h.projector()
	}
	r := feed.NewRunner(h.DB, p, feed.Options{Holder: "test"})
	h.catchUps++
	for {
		st, err := r.Step(h.Ctx)
		if err != nil {
			h.T.Fatalf("project: %v", err)
		}
		h.steps++
		if st.CaughtUp {
			return
		}
	}
}

func (h *history) at(d time.Duration) {
	h.T.Helper()
	if h.onStep != nil {
		h.onStep()
	}
	now := h.Clock.Now()
	if want := epoch.Add(d); want.After(now) {
		h.Clock.Advance(want.Sub(now))
	}
}

func (h *history) enqueue(agent, kind string) runs.Run {
	h.T.Helper()
	r, _, err := h.Svc.Enqueue(h.Ctx, h.Caller, runs.Spec{
		ProjectID: "p1", Subject: "s-" + uuid.NewString(), Kind: kind, AgentID: agent,
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 10, MaxCorrections: 3,
	})
	if err != nil {
		h.T.Fatalf("enqueue: %v", err)
	}
	return r
}

func (h *history) claim(release string, leaseSeconds int, want runs.Run) runs.Claimed {
	h.T.Helper()
	cl, err := h.Svc.Claim(h.Ctx, h.Caller, runs.ClaimRequest{HolderID: "holder-1", ReleaseID: release,
		AdapterVersion: "1.0", ModelProfileID: "m", LeaseSeconds: leaseSeconds})
	if err != nil {
		h.T.Fatalf("claim: %v", err)
	}
	if cl.Run.RunID != want.RunID {
		h.T.Fatalf("claimed run %s, the script expects %s", cl.Run.RunID, want.RunID)
	}
	return cl
}

func (h *history) complete(cl runs.Claimed, st api.AttemptState) {
	h.T.Helper()
	if _, err := h.Svc.Complete(h.Ctx, h.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: st}); err != nil {
		h.T.Fatalf("complete: %v", err)
	}
}

func (h *history) call(cl runs.Claimed, seq int, target string) calls.Call {
	h.T.Helper()
	c, _, err := h.calls.Record(h.Ctx, h.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
		calls.Draft{Sequence: seq, Kind: api.CallTool, Target: target, RequestHash: fmt.Sprintf("h%d", seq)})
	if err != nil {
		h.T.Fatalf("record call: %v", err)
	}
	return c
}

func (h *history) finishCall(cl runs.Claimed, c calls.Call, status api.CallStatus) {
	h.T.Helper()
	if _, err := h.calls.FinishCall(h.Ctx, h.Tenant, cl.Attempt.AttemptID, c.CallID, cl.Lease.FencingToken,
		calls.Finish{Status: status}); err != nil {
		h.T.Fatalf("finish call: %v", err)
	}
}

// script plays the tenant's history (times from the epoch, 12:00 UTC):
//
//	0s A enqueued (agent-a, review); 1s B (agent-a, review); 2s C (agent-b, build)
//	10s A claimed with rel-1 (a1); 20s B with rel-1 (b1)
//	12s..12.25s a1 calls search, succeeded (250 ms); 13s..14s search again, failed (1000 ms)
//	30s a1 completes succeeded (A ends succeeded)
//	40s b1 released (B queued again)
//	50s C claimed with rel-2 (c1); 55s c1 calls fetch, never finished
//	51s c1 asks an approval, answered approved at 171s (120 s); 52s an input expiring at 82s
//	60s B claimed with rel-1 for 60 s (b2); 121s the reaper takes b2's lease (lost), B queued
//	1h00m10s c1 completes failed (C ends failed; its fetch call is abandoned, 3555 s)
//	1h00m20s B cancelled while queued; 2h D enqueued (agent-a, review), 2h00m01s cancelled
func (h *history) script() {
	h.T.Helper()
	a := h.enqueue("agent-a", "review")
	h.at(time.Second)
	b := h.enqueue("agent-a", "review")
	h.at(2 * time.Second)
	c := h.enqueue("agent-b", "build")
	h.at(10 * time.Second)
	a1 := h.claim("rel-1", 3600, a)
	h.at(12 * time.Second)
	s1 := h.call(a1, 1, "search")
	h.at(12*time.Second + 250*time.Millisecond)
	h.finishCall(a1, s1, api.CallSucceeded)
	h.at(13 * time.Second)
	s2 := h.call(a1, 2, "search")
	h.at(14 * time.Second)
	h.finishCall(a1, s2, api.CallFailed)
	h.at(20 * time.Second)
	b1 := h.claim("rel-1", 3600, b)
	h.at(30 * time.Second)
	h.complete(a1, api.AttemptSucceeded)
	h.at(40 * time.Second)
	zero := time.Duration(0)
	if _, err := h.Svc.Release(h.Ctx, h.Tenant, b1.Attempt.AttemptID, b1.Lease.FencingToken, runs.Release{RetryAfter: &zero}); err != nil {
		h.T.Fatalf("release: %v", err)
	}
	h.at(50 * time.Second)
	c1 := h.claim("rel-2", 7200, c)
	h.at(51 * time.Second)
	approval, err := h.dec.Request(h.Ctx, h.Tenant, c1.Attempt.AttemptID, c1.Lease.FencingToken, decisions.Request{Kind: api.DecisionApproval})
	if err != nil {
		h.T.Fatalf("request decision: %v", err)
	}
	h.at(52 * time.Second)
	if _, err := h.dec.Request(h.Ctx, h.Tenant, c1.Attempt.AttemptID, c1.Lease.FencingToken,
		decisions.Request{Kind: api.DecisionInput, ExpiresIn: 30 * time.Second}); err != nil {
		h.T.Fatalf("request decision: %v", err)
	}
	h.at(55 * time.Second)
	h.call(c1, 1, "fetch")
	h.at(60 * time.Second)
	h.claim("rel-1", 60, b)
	h.at(121 * time.Second)
	if _, err := h.Svc.Reap(h.Ctx); err != nil {
		h.T.Fatalf("reap: %v", err)
	}
	if _, err := decisions.ExpirePending(h.Ctx, h.DB); err != nil {
		h.T.Fatalf("expire decisions: %v", err)
	}
	h.at(171 * time.Second)
	if _, err := h.dec.Answer(h.Ctx, h.Tenant, approval.DecisionID, decisions.Answer{Status: api.DecisionApproved,
		KeyID: "admin", IfMatch: anyVersion{}}); err != nil {
		h.T.Fatalf("answer: %v", err)
	}
	h.at(time.Hour + 10*time.Second)
	h.complete(c1, api.AttemptFailed)
	h.at(time.Hour + 20*time.Second)
	if _, err := h.Svc.Cancel(h.Ctx, h.Tenant, b.RunID); err != nil {
		h.T.Fatalf("cancel: %v", err)
	}
	h.at(2 * time.Hour)
	d := h.enqueue("agent-a", "review")
	h.at(2*time.Hour + time.Second)
	if _, err := h.Svc.Cancel(h.Ctx, h.Tenant, d.RunID); err != nil {
		h.T.Fatalf("cancel: %v", err)
	}

	// Another tenant's history, in the same window, which no answer may count.
	o := h.Other(h.T)
	o.Complete(o.Lease())
}

func window(t *testing.T, group api.InsightGroup) insights.Window {
	t.Helper()
	from, to := api.NewTime(epoch), api.NewTime(epoch.Add(3*time.Hour))
	var g *api.InsightGroup
	if group != "" {
		g = &group
	}
	w, err := insights.Resolve(epoch.Add(4*time.Hour), api.InsightParams{From: &from, To: &to}, g)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// counts is a group's series as name -> per-bucket counts, without the all-zero series.
func counts(g api.InsightSeriesGroup) map[string][]int64 {
	out := map[string][]int64{}
	for _, s := range g.Series {
		if s.Total > 0 {
			out[s.Name] = s.Counts
		}
	}
	return out
}

func keys(gs []api.InsightSeriesGroup) []string {
	var out []string
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%s:%d", g.Key, g.Total))
	}
	return out
}

func ms(v int64) *int64 { return &v }

// TestInsightsOfAScriptedHistory: every insight of the scripted history has the exact
// counts per bucket, group and series and the exact percentiles, on every dialect, and
// counts nothing of the other tenant.
func TestInsightsOfAScriptedHistory(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		h := newHistory(t, tgt)
		h.script()
		h.project()
		st := insights.NewStore(h.DB)
		ctx, tenant := h.Ctx, h.Tenant

		runsEnded, err := st.RunsEnded(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runsEnded.Buckets) != 3 || !runsEnded.Buckets[1].Equal(epoch.Add(time.Hour)) {
			t.Errorf("buckets %v", runsEnded.Buckets)
		}
		want := map[string][]int64{"succeeded": {1, 0, 0}, "failed": {0, 1, 0}, "cancelled": {0, 1, 1}}
		if len(runsEnded.Groups) != 1 || !reflect.DeepEqual(counts(runsEnded.Groups[0]), want) || runsEnded.Groups[0].Total != 4 {
			t.Errorf("runs ended: %+v, want %v", runsEnded.Groups, want)
		}

		byAgent, err := st.RunsEnded(ctx, tenant, window(t, api.GroupAgent), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(byAgent.Groups); !reflect.DeepEqual(got, []string{"agent-a:3", "agent-b:1"}) {
			t.Errorf("runs ended by agent: %v", got)
		}
		byRelease, err := st.RunsEnded(ctx, tenant, window(t, api.GroupRelease), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		// A and B (its latest attempt b2) ran rel-1, C rel-2; D never ran (no release).
		if got := keys(byRelease.Groups); !reflect.DeepEqual(got, []string{"rel-1:2", ":1", "rel-2:1"}) {
			t.Errorf("runs ended by release: %v", got)
		}
		// By error code (issue 29): B and D ended cancelled (a cancel writes cancelled), A and C
		// without an error; the one lost lease (B's b2) is lease_lost.
		byError, err := st.RunsEnded(ctx, tenant, window(t, api.GroupErrorCode), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(byError.Groups); !reflect.DeepEqual(got, []string{":2", "cancelled:2"}) {
			t.Errorf("runs ended by error code: %v", got)
		}
		lostByError, err := st.LeasesLost(ctx, tenant, window(t, api.GroupErrorCode), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(lostByError.Groups); !reflect.DeepEqual(got, []string{"lease_lost:1"}) {
			t.Errorf("leases lost by error code: %v", got)
		}
		rel2 := "rel-2"
		onlyRel2, err := st.RunsEnded(ctx, tenant, window(t, ""), insights.Filter{ReleaseID: &rel2})
		if err != nil {
			t.Fatal(err)
		}
		if len(onlyRel2.Groups) != 1 || !reflect.DeepEqual(counts(onlyRel2.Groups[0]), map[string][]int64{"failed": {0, 1, 0}}) {
			t.Errorf("runs ended of rel-2: %+v", onlyRel2.Groups)
		}

		attemptsEnded, err := st.AttemptsEnded(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		want = map[string][]int64{"succeeded": {1, 0, 0}, "released": {1, 0, 0}, "lost": {1, 0, 0}, "failed": {0, 1, 0}}
		if len(attemptsEnded.Groups) != 1 || !reflect.DeepEqual(counts(attemptsEnded.Groups[0]), want) {
			t.Errorf("attempts ended: %+v, want %v", attemptsEnded.Groups, want)
		}
		build := "build"
		ofBuild, err := st.AttemptsEnded(ctx, tenant, window(t, api.GroupKind), insights.Filter{Kind: &build})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(ofBuild.Groups); !reflect.DeepEqual(got, []string{"build:1"}) {
			t.Errorf("attempts ended of kind build, by kind: %v", got)
		}

		for _, g := range []api.InsightGroup{api.GroupAgent, api.GroupRelease} {
			lost, err := st.LeasesLost(ctx, tenant, window(t, g), insights.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			wantKey := map[api.InsightGroup]string{api.GroupAgent: "agent-a:1", api.GroupRelease: "rel-1:1"}[g]
			if got := keys(lost.Groups); !reflect.DeepEqual(got, []string{wantKey}) ||
				!reflect.DeepEqual(counts(lost.Groups[0]), map[string][]int64{"lost": {1, 0, 0}}) {
				t.Errorf("leases lost by %s: %+v", g, lost.Groups)
			}
		}

		perRun, err := st.AttemptsPerRun(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantBins := []api.AttemptsPerRunBin{{Attempts: 0, Runs: 1}, {Attempts: 1, Runs: 2}, {Attempts: 2, Runs: 1}}
		if len(perRun.Groups) != 1 || perRun.Groups[0].Runs != 4 || !reflect.DeepEqual(perRun.Groups[0].Counts, wantBins) {
			t.Errorf("attempts per run: %+v, want %v", perRun.Groups, wantBins)
		}

		// A waited 10 s, B 19 s, C 48 s for their first claim; D was never claimed.
		lat, err := st.ClaimLatency(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantLat := api.DurationSummary{Count: 3, P50Ms: ms(30_000), P95Ms: ms(48_000), MaxMs: ms(48_000)}
		if len(lat.Groups) != 1 || !reflect.DeepEqual(lat.Groups[0].Latency, wantLat) {
			t.Errorf("claim latency: %+v, want %+v", lat.Groups, wantLat)
		}
		latByKind, err := st.ClaimLatency(ctx, tenant, window(t, api.GroupKind), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantByKind := []api.ClaimLatencyGroup{
			{InsightGroupKey: api.InsightGroupKey{Key: "review"}, Latency: api.DurationSummary{Count: 2, P50Ms: ms(10_000), P95Ms: ms(19_000), MaxMs: ms(19_000)}},
			{InsightGroupKey: api.InsightGroupKey{Key: "build"}, Latency: api.DurationSummary{Count: 1, P50Ms: ms(48_000), P95Ms: ms(48_000), MaxMs: ms(48_000)}},
		}
		if !reflect.DeepEqual(latByKind.Groups, wantByKind) {
			t.Errorf("claim latency by kind: %+v, want %+v", latByKind.Groups, wantByKind)
		}

		cs, err := st.Calls(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls := []api.CallTargetInsight{
			{InsightGroupKey: api.InsightGroupKey{Key: "search"}, Calls: 2, Failed: 1, FailureRate: 0.5,
				Duration: api.DurationSummary{Count: 2, P50Ms: ms(250), P95Ms: ms(1000), MaxMs: ms(1000)}},
			{InsightGroupKey: api.InsightGroupKey{Key: "fetch"}, Calls: 1, Failed: 1, FailureRate: 1,
				Duration: api.DurationSummary{Count: 1, P50Ms: ms(3_555_000), P95Ms: ms(3_555_000), MaxMs: ms(3_555_000)}},
		}
		if !reflect.DeepEqual(cs.Targets, wantCalls) {
			t.Errorf("calls: %+v, want %+v", cs.Targets, wantCalls)
		}
		agentB := "agent-b"
		if cs, err := st.Calls(ctx, tenant, window(t, ""), insights.Filter{AgentID: &agentB}); err != nil ||
			len(cs.Targets) != 1 || cs.Targets[0].Key != "fetch" {
			t.Errorf("calls of agent-b: %+v %v", cs.Targets, err)
		}

		ds, err := st.Decisions(ctx, tenant, window(t, ""), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantDec := []api.DecisionKindInsight{
			{Kind: api.DecisionApproval, Requested: 1, Answered: 1,
				TimeToAnswer: api.DurationSummary{Count: 1, P50Ms: ms(120_000), P95Ms: ms(120_000), MaxMs: ms(120_000)}},
			{Kind: api.DecisionChoice},
			{Kind: api.DecisionInput, Requested: 1, Expired: 1},
		}
		if !reflect.DeepEqual(ds.Kinds, wantDec) {
			t.Errorf("decisions: %+v, want %+v", ds.Kinds, wantDec)
		}

		// The other tenant sees only its own run.
		other := h.Other(t)
		if got, err := st.RunsEnded(ctx, other.Tenant, window(t, ""), insights.Filter{}); err != nil || len(got.Groups) != 0 {
			t.Errorf("a fresh tenant's runs ended: %+v %v", got.Groups, err)
		}
	})
}

// TestInsightsFoldGroupsPastTheLargest: past api.InsightMaxGroups groups, the smallest are
// summed into one group marked other, last.
func TestInsightsFoldGroupsPastTheLargest(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		h := newHistory(t, tgt)
		for i := range api.InsightMaxGroups + 2 {
			n := 1
			if i == 0 {
				n = 2
			}
			for range n {
				r := h.enqueue(fmt.Sprintf("ag-%02d", i), "review")
				if _, err := h.Svc.Cancel(h.Ctx, h.Tenant, r.RunID); err != nil {
					t.Fatal(err)
				}
			}
		}
		h.project()
		got, err := insights.NewStore(h.DB).RunsEnded(h.Ctx, h.Tenant, window(t, api.GroupAgent), insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Groups) != api.InsightMaxGroups+1 {
			t.Fatalf("%d groups, want %d", len(got.Groups), api.InsightMaxGroups+1)
		}
		first, last := got.Groups[0], got.Groups[len(got.Groups)-1]
		if first.Key != "ag-00" || first.Total != 2 || got.Groups[49].Key != "ag-49" {
			t.Errorf("largest first, then by key: %v", keys(got.Groups))
		}
		if !last.Other || last.Key != "" || last.Total != 2 {
			t.Errorf("other: %+v", last)
		}
	})
}

// TestResolveWindow: defaults, rounding to bucket boundaries and the bounds of a window.
func TestResolveWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 4, 1, 12, 34, 56, 0, time.UTC)
	tm := func(s string) *api.Time { v, _ := api.ParseTime(s); return &v }
	b := func(v api.InsightBucket) *api.InsightBucket { return &v }
	cases := []struct {
		name     string
		p        api.InsightParams
		from, to string
		buckets  int
		bad      string
	}{
		{"the last 24 h in hours", api.InsightParams{}, "2026-03-31T12:00:00Z", "2026-04-01T13:00:00Z", 25, ""},
		{"five minutes", api.InsightParams{Bucket: b(api.Bucket5m)}, "2026-03-31T12:30:00Z", "2026-04-01T12:35:00Z", 289, ""},
		{"days", api.InsightParams{Bucket: b(api.Bucket1d), From: tm("2026-03-01T05:00:00Z")}, "2026-03-01T00:00:00Z", "2026-04-02T00:00:00Z", 32, ""},
		{"to before from", api.InsightParams{From: tm("2026-04-01T00:00:00Z"), To: tm("2026-03-01T00:00:00Z")}, "", "", 0, "to"},
		{"too many buckets", api.InsightParams{Bucket: b(api.Bucket5m), From: tm("2026-03-01T00:00:00Z")}, "", "", 0, "bucket"},
		{"500 buckets", api.InsightParams{Bucket: b(api.Bucket1h), From: tm("2026-03-01T00:00:00Z"), To: tm("2026-03-21T20:00:00Z")}, "2026-03-01T00:00:00Z", "2026-03-21T20:00:00Z", 500, ""},
	}
	for _, c := range cases {
		w, err := insights.Resolve(now, c.p, nil)
		if c.bad != "" {
			if e, ok := apperr.As(err); !ok || len(e.Fields) != 1 || e.Fields[0].Field != c.bad {
				t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.bad)
			}
			continue
		}
		if err != nil || w.From.Format(time.RFC3339) != c.from || w.To.Format(time.RFC3339) != c.to || w.Buckets() != c.buckets {
			t.Errorf("%s: %v..%v (%d buckets) %v, want %s..%s (%d)", c.name, w.From, w.To, w.Buckets(), err, c.from, c.to, c.buckets)
		}
	}
}

// anyVersion is If-Match: * (any current version).
type anyVersion struct{}

func (anyVersion) Matches(sqldb.RowVersion) bool { return true }

// TestRollupsEqualTheDirectAnswers: every insight read from the roll-ups equals the answer
// of the direct statements over the source tables (the reference, as the service answered
// before the roll-ups), for every grouping, bucket and filter, with the projector run
// between the script's steps (so rows are projected open and projected again when they
// change: calls finishing, decisions answered, runs re-claimed and ended) and once more
// at the end.
func TestRollupsEqualTheDirectAnswers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		t.Run("SmallBatches", func(t *testing.T) {
			t.Parallel()
			rollupsEqualTheDirectAnswers(t, tgt, nil)
		})
		// A batch that reads every change at once and a budget of one cell: every step
		// stops after its first version with facts, and the answers are the same.
		t.Run("CellBudget", func(t *testing.T) {
			t.Parallel()
			h := rollupsEqualTheDirectAnswers(t, tgt, func(db *sqldb.DB) *insights.Projector {
				return insights.NewProjectorCells(db, 100000, 1)
			})
			if h.steps <= 2*h.catchUps {
				t.Fatalf("%d steps in %d catch-ups: the cell budget never cut a step short", h.steps, h.catchUps)
			}
		})
	})
}

// insightRead reads one insight of the history's tenant from a store.
type insightRead func(st *insights.Store, w insights.Window, f insights.Filter) (any, error)

// insightReads are the insights a roll-up test compares with the direct statements, by name.
func insightReads(h *history) map[string]insightRead {
	return map[string]insightRead{
		"runs": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.RunsEnded(h.Ctx, h.Tenant, w, f)
		},
		"attempts": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.AttemptsEnded(h.Ctx, h.Tenant, w, f)
		},
		"leases-lost": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.LeasesLost(h.Ctx, h.Tenant, w, f)
		},
		"attempts-per-run": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.AttemptsPerRun(h.Ctx, h.Tenant, w, f)
		},
		"claim-latency": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.ClaimLatency(h.Ctx, h.Tenant, w, f)
		},
		"calls": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.Calls(h.Ctx, h.Tenant, w, f)
		},
		"decisions": func(st *insights.Store, w insights.Window, f insights.Filter) (any, error) {
			return st.Decisions(h.Ctx, h.Tenant, w, f)
		},
	}
}

func rollupsEqualTheDirectAnswers(t *testing.T, tgt dbtest.Target, projector func(*sqldb.DB) *insights.Projector) *history {
	h := newHistory(t, tgt)
	if projector != nil {
		h.projector = func() *insights.Projector { return projector(h.DB) }
	}
	h.onStep = h.project
	h.script()
	// E: claimed with rel-1, released, claimed again with rel-2 and completed. Its first
	// claim's release (claim latency's) and its latest attempt's (the ended runs') differ.
	h.at(2*time.Hour + 10*time.Minute)
	e := h.enqueue("agent-b", "build")
	h.at(2*time.Hour + 10*time.Minute + 5*time.Second)
	e1 := h.claim("rel-1", 600, e)
	zero := time.Duration(0)
	if _, err := h.Svc.Release(h.Ctx, h.Tenant, e1.Attempt.AttemptID, e1.Lease.FencingToken, runs.Release{RetryAfter: &zero}); err != nil {
		t.Fatalf("release: %v", err)
	}
	h.at(2*time.Hour + 10*time.Minute + 7*time.Second)
	h.complete(h.claim("rel-2", 600, e), api.AttemptSucceeded)
	// More than InsightMaxGroups agents, so the fold into "other" is compared too.
	for i := range api.InsightMaxGroups + 3 {
		r := h.enqueue(fmt.Sprintf("ag-%02d", i), "bulk")
		if _, err := h.Svc.Cancel(h.Ctx, h.Tenant, r.RunID); err != nil {
			t.Fatal(err)
		}
	}
	h.project()
	rolled, direct := insights.NewStore(h.DB), insights.NewReferenceStore(h.DB)
	reads := insightReads(h)
	p1, agentA, rel1, review := "p1", "agent-a", "rel-1", "review"
	filters := map[string]insights.Filter{"none": {}, "project": {ProjectID: &p1}, "agent": {AgentID: &agentA},
		"release": {ReleaseID: &rel1}, "kind": {Kind: &review}}
	groups := []api.InsightGroup{"", api.GroupProject, api.GroupAgent, api.GroupRelease, api.GroupKind}
	compared := 0
	for _, bucket := range []api.InsightBucket{api.Bucket5m, api.Bucket1h, api.Bucket1d} {
		from, to := api.NewTime(epoch.Add(-time.Hour)), api.NewTime(epoch.Add(3*time.Hour))
		for _, g := range groups {
			var gp *api.InsightGroup
			if g != "" {
				gp = &g
			}
			w, err := insights.Resolve(epoch.Add(4*time.Hour), api.InsightParams{From: &from, To: &to, Bucket: &bucket}, gp)
			if err != nil {
				t.Fatal(err)
			}
			for name, rd := range reads {
				for fname, f := range filters {
					got, err := rd(rolled, w, f)
					if err != nil {
						t.Fatal(err)
					}
					want, err := rd(direct, w, f)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s by %q in %s buckets, filter %s:\nroll-ups %+v\ndirect   %+v", name, g, bucket, fname, got, want)
					}
					compared++
				}
			}
		}
	}
	if compared != 3*5*7*5 {
		t.Fatalf("compared %d answers", compared)
	}
	return h
}

// TestPurgeKeepsPastAnswers: rows purged by retention never reach the change feed, so the
// roll-ups keep counting them and an answer about the past does not change (the direct
// statements over the source tables lose the purged runs).
func TestPurgeKeepsPastAnswers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		h := newHistory(t, tgt)
		h.script()
		h.project()
		st, ref := insights.NewStore(h.DB), insights.NewReferenceStore(h.DB)
		w := window(t, api.GroupAgent)
		before, err := st.RunsEnded(h.Ctx, h.Tenant, w, insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		calls, err := st.Calls(h.Ctx, h.Tenant, w, insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		one := 1
		if _, _, err := projects.NewStore(h.DB).Put(h.Ctx, h.Tenant, "p1", projects.Change{RetentionDays: &one,
			IfMatch: anyVersion{}}); err != nil {
			t.Fatal(err)
		}
		h.Clock.Advance(3 * 24 * time.Hour)
		res, err := retention.Purge(h.Ctx, h.DB, retention.Options{Log: apitest.Quiet()})
		if err != nil || res.Runs == 0 {
			t.Fatalf("purge: %+v, %v", res, err)
		}
		h.project()
		after, err := st.RunsEnded(h.Ctx, h.Tenant, w, insights.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Errorf("runs ended after the purge %+v, before %+v", after, before)
		}
		if got, err := st.Calls(h.Ctx, h.Tenant, w, insights.Filter{}); err != nil || !reflect.DeepEqual(got, calls) {
			t.Errorf("calls after the purge %+v (%v), before %+v", got, err, calls)
		}
		if direct, err := ref.RunsEnded(h.Ctx, h.Tenant, w, insights.Filter{}); err != nil || reflect.DeepEqual(direct, before) {
			t.Errorf("the direct statement still counts the purged runs (%v): the purge purged nothing of the window", err)
		}
	})
}

// TestParkedAttemptsAreTheirOwnSeries: an attempt that parked its run (issue 28) is counted
// as parked, not released, by the direct statements and by the roll-ups alike; its run,
// resumed and ended, counts once.
func TestParkedAttemptsAreTheirOwnSeries(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		h := newHistory(t, tgt)
		h.onStep = h.project
		r := h.enqueue("agent-a", "review")
		h.at(time.Second)
		cl := h.claim("rel-1", 60, r)
		d, err := h.dec.Request(h.Ctx, h.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, decisions.Request{Kind: api.DecisionApproval})
		if err != nil {
			t.Fatal(err)
		}
		h.at(2 * time.Second)
		if _, err := h.Svc.Park(h.Ctx, h.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
			runs.Park{DecisionIDs: []uuid.UUID{d.DecisionID}}); err != nil {
			t.Fatal(err)
		}
		h.at(3 * time.Second)
		if _, err := h.dec.Answer(h.Ctx, h.Tenant, d.DecisionID, decisions.Answer{Status: api.DecisionApproved,
			KeyID: "admin", IfMatch: anyVersion{}}); err != nil {
			t.Fatal(err)
		}
		h.at(4 * time.Second)
		h.complete(h.claim("rel-1", 60, r), api.AttemptSucceeded)
		h.project()
		want := map[string][]int64{"parked": {1, 0, 0}, "succeeded": {1, 0, 0}}
		for name, st := range map[string]*insights.Store{"roll-ups": insights.NewStore(h.DB), "direct": insights.NewReferenceStore(h.DB)} {
			got, err := st.AttemptsEnded(h.Ctx, h.Tenant, window(t, ""), insights.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Groups) != 1 || !reflect.DeepEqual(counts(got.Groups[0]), want) {
				t.Errorf("%s: attempts ended %+v, want %v", name, got.Groups, want)
			}
		}
	})
}
