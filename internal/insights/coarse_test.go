package insights_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// day plays one day of the long history: a run of agent-a or agent-b (by day) claimed
// with rel-1 or rel-2, two calls of search and fetch (one in three failed, durations
// cycling through 100 ms, 2 s and 40 s), ended succeeded or failed.
func (h *history) day(d int) {
	h.T.Helper()
	start := time.Duration(d)*24*time.Hour + 6*time.Hour
	h.at(start)
	r := h.enqueue([]string{"agent-a", "agent-b"}[d%2], "review")
	h.at(start + time.Duration(d%5)*time.Second + time.Second)
	cl := h.claim([]string{"rel-1", "rel-2"}[d%3%2], 3600, r)
	for i, target := range []string{"search", "fetch"} {
		c := h.call(cl, i+1, target)
		h.at(h.Clock.Now().Sub(epoch) + []time.Duration{100 * time.Millisecond, 2 * time.Second, 40 * time.Second}[(d+i)%3])
		st := api.CallSucceeded
		if (d+i)%3 == 0 {
			st = api.CallFailed
		}
		h.finishCall(cl, c, st)
	}
	end := api.AttemptSucceeded
	if d%4 == 0 {
		end = api.AttemptFailed
	}
	h.complete(cl, end)
}

// TestCoarseCellsEqualTheDirectAnswers: the binned insights (calls, claim latency,
// attempts per run, decisions) over windows of months, which the 16-day cells tile in the
// middle and the window's own buckets at the ends, equal the direct statements' answers;
// they read fewer cells than the finer grains alone; and they stay equal when an older
// binary's projector (no coarse cells) moved the feed on (the insights read the finer
// cells until the projector has rebuilt the coarse ones, even across a step that failed
// after rebuilding).
func TestCoarseCellsEqualTheDirectAnswers(t *testing.T) {
	t.Parallel()
	h := newHistory(t, dbtest.SQLite())
	for d := range 100 {
		h.day(d)
	}
	base := epoch.Truncate(24 * time.Hour)
	c := time.Unix(0, 0).UTC().Add(base.Add(10 * 24 * time.Hour).Sub(time.Unix(0, 0)).Truncate(time.Duration(insights.CoarseGrain) * time.Second)).
		Add(time.Duration(insights.CoarseGrain) * time.Second)
	type win struct {
		from, to time.Time
		bucket   api.InsightBucket
	}
	wins := []win{
		{base.Add(-3 * 24 * time.Hour), base.Add(103 * 24 * time.Hour), api.Bucket1d},
		{base.Add(2 * 24 * time.Hour), base.Add(70 * 24 * time.Hour), api.Bucket1d},
		// 480 hours around the first whole 16-day bucket after the tenth day.
		{c.Add(-2*24*time.Hour + 5*time.Hour), c.Add(18*24*time.Hour + 5*time.Hour), api.Bucket1h},
	}
	now := base.Add(110 * 24 * time.Hour)
	all, reads := insightReads(h), map[string]insightRead{}
	for _, name := range []string{"calls", "claim-latency", "attempts-per-run", "decisions"} {
		reads[name] = all[name]
	}
	agentA := "agent-a"
	filters := map[string]insights.Filter{"none": {}, "agent": {AgentID: &agentA}}
	// compare reads every window, insight, grouping and filter with a fresh store and
	// returns the cells it read.
	// (equal: compare the answers; a failed step leaves the roll-ups behind the feed).
	compare := func(stage string, equal bool) int64 {
		t.Helper()
		rolled, direct := insights.NewStore(h.DB), insights.NewReferenceStore(h.DB)
		for _, wn := range wins {
			for _, g := range []api.InsightGroup{"", api.GroupRelease, api.GroupAgent} {
				var gp *api.InsightGroup
				if g != "" {
					gp = &g
				}
				from, to, bucket := api.NewTime(wn.from), api.NewTime(wn.to), wn.bucket
				w, err := insights.Resolve(now, api.InsightParams{From: &from, To: &to, Bucket: &bucket}, gp)
				if err != nil {
					t.Fatal(err)
				}
				if lo := w.From.Unix(); lo%insights.CoarseGrain == 0 || lo-lo%insights.CoarseGrain+2*insights.CoarseGrain > w.To.Unix() {
					t.Fatalf("window %v..%v: the case wants ends inside coarse buckets and one whole between", w.From, w.To)
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
						if equal && !reflect.DeepEqual(got, want) {
							t.Errorf("%s: %s by %q over %v..%v in %s buckets, filter %s:\nroll-ups %+v\ndirect   %+v",
								stage, name, g, w.From, w.To, wn.bucket, fname, got, want)
						}
					}
				}
			}
		}
		return rolled.CellsRead()
	}
	h.project()
	coarse := compare("coarse cells", true)

	// An older binary's projector moves the feed on: the coarse cells lack the new day.
	h.day(100)
	step(t, h, insights.NewProjectorBefore42(h.DB))
	fine := compare("after an older binary's step", true)
	if fine < 2*coarse {
		t.Fatalf("the finer cells alone read %d cells, the coarse ones %d: want at least twice as many", fine, coarse)
	}

	// The next step rebuilds the coarse cells, in the step's transaction: a step that fails
	// after rebuilding them leaves them stale (answers from the finer cells), the one after
	// it rebuilds them again.
	h.day(101)
	var fail atomic.Bool
	fail.Store(true)
	h.DB.SetStatementHook(func(_ context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		if strings.Contains(st.Query, "SET CoarseThrough") && fail.CompareAndSwap(true, false) {
			return errInjected
		}
		return nil
	})
	r := feed.NewRunner(h.DB, insights.NewProjector(h.DB, 0), feed.Options{Holder: "test"})
	if _, err := r.Step(h.Ctx); !errors.Is(err, errInjected) {
		t.Fatalf("step: %v, want the injected failure", err)
	}
	h.DB.SetStatementHook(nil)
	failed := compare("after a failed step", false)
	if failed < fine {
		t.Fatalf("after a failed rebuild the answers read %d cells, want the finer cells' (%d before the day)", failed, fine)
	}
	step(t, h, insights.NewProjector(h.DB, 0))
	if n := compare("rebuilt", true); 2*n > failed {
		t.Fatalf("the rebuilt coarse cells read %d cells, the finer ones %d: want at most half", n, failed)
	}
	t.Logf("%d cells read with the coarse cells, %d without", coarse, fine)
}

var errInjected = fmt.Errorf("injected")

// step catches p up.
func step(t *testing.T, h *history, p *insights.Projector) {
	t.Helper()
	r := feed.NewRunner(h.DB, p, feed.Options{Holder: "test"})
	if err := r.CatchUp(h.Ctx); err != nil {
		t.Fatal(err)
	}
}
