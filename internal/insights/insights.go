// Package insights answers admins' questions about a tenant's history over a bounded window
// (DESIGN.md section 5a): runs ended by outcome, attempts ended by state, attempts per
// finished run, time from enqueue to first claim, calls per target, decisions and their
// time to answer, leases lost. Each insight reads the roll-ups (rollup.go) that a projector
// of the change feed (internal/feed) maintains off the write path: the cells of the
// window's buckets only, so its work is bounded by the window's buckets (at most
// api.InsightMaxBuckets), groups (at most api.InsightMaxGroups named, the rest summed as
// "other"), series and histogram bins, never by the history's size. The direct statements
// over the source tables (queries.go) stay as the reference the roll-ups are tested to
// equal.
//
// Percentiles are computed in Go from fixed histogram buckets (api.DurationBoundsMs) that
// the database counts: a percentile is the upper bound of the bin holding it, or the
// largest duration seen when smaller. They are exact where durations sit on the bounds and
// otherwise overstate by less than one bin's width; a sample would need the rows themselves.
package insights

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// DefaultSpan is the window of a request that names neither end.
const DefaultSpan = 24 * time.Hour

// Window is a resolved window: bucket-aligned ends, the bucket and the grouping.
type Window struct {
	From, To time.Time
	Bucket   api.InsightBucket
	// GroupBy is "" when the insight is not grouped.
	GroupBy api.InsightGroup
}

// Width is the bucket's duration.
func (w Window) Width() time.Duration { return bucketWidth(w.Bucket) }

// Buckets is how many buckets the window holds.
func (w Window) Buckets() int { return int(w.To.Sub(w.From) / w.Width()) }

// Starts are the buckets' start times, oldest first.
func (w Window) Starts() []time.Time {
	out := make([]time.Time, w.Buckets())
	for i := range out {
		out[i] = w.From.Add(time.Duration(i) * w.Width())
	}
	return out
}

// Wire is the window as the API answers it.
func (w Window) Wire() api.InsightWindow {
	out := api.InsightWindow{From: api.NewTime(w.From), To: api.NewTime(w.To), Bucket: w.Bucket}
	if w.GroupBy != "" {
		g := w.GroupBy
		out.GroupBy = &g
	}
	return out
}

func bucketWidth(b api.InsightBucket) time.Duration {
	switch b {
	case api.Bucket5m:
		return 5 * time.Minute
	case api.Bucket1d:
		return 24 * time.Hour
	default:
		return time.Hour
	}
}

// Resolve turns a request's window into a Window at now: absent ends default to the last
// DefaultSpan, the start rounds down and the end up to bucket boundaries (UTC, from the Unix
// epoch). apperr.Invalid (naming the field) when the end is not after the start or the
// window holds more than api.InsightMaxBuckets buckets.
func Resolve(now time.Time, p api.InsightParams, group *api.InsightGroup) (Window, error) {
	w := Window{Bucket: api.DefaultInsightBucket}
	if p.Bucket != nil {
		w.Bucket = *p.Bucket
	}
	if group != nil {
		w.GroupBy = *group
	}
	to := now
	if p.To != nil {
		to = p.To.Time
	}
	from := to.Add(-DefaultSpan)
	if p.From != nil {
		from = p.From.Time
	}
	// A window's ends are computed with as nanoseconds since 1970 (int64): outside
	// 1678..2262 they wrapped, into a 500 or a window shifted by centuries.
	for _, end := range []struct {
		field string
		t     time.Time
	}{{"from", from}, {"to", to}} {
		if end.t.Before(windowMin) || end.t.After(windowMax) {
			return Window{}, apperr.FieldsInvalid(api.FieldError{Field: end.field, Reason: windowRange})
		}
	}
	if !to.After(from) {
		return Window{}, apperr.FieldsInvalid(api.FieldError{Field: "to", Reason: "must be after from"})
	}
	width := w.Width()
	w.From = floor(from, width)
	w.To = floor(to, width)
	if w.To.Before(to) {
		w.To = w.To.Add(width)
	}
	if n := w.Buckets(); n > api.InsightMaxBuckets {
		return Window{}, apperr.FieldsInvalid(api.FieldError{Field: "bucket",
			Reason: fmt.Sprintf("the window holds %d buckets of %s; at most %d (widen the bucket or narrow from..to)",
				n, w.Bucket, api.InsightMaxBuckets)})
	}
	return w, nil
}

// The times an insight window may span: those whose nanoseconds since 1970 (and a bucket
// more) fit in an int64.
var (
	windowMin = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	windowMax = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

const windowRange = "must be within 1678-01-01..2262-01-01 UTC"

// floor rounds t down to a multiple of d since the Unix epoch, in UTC.
func floor(t time.Time, d time.Duration) time.Time {
	t = t.UTC()
	rem := time.Duration(t.UnixNano() % int64(d))
	if rem < 0 {
		rem += d
	}
	return t.Add(-rem)
}

// Filter narrows an insight to one project, agent, release or run kind (nil: any).
type Filter struct {
	ProjectID, AgentID, ReleaseID, Kind *string
}

// byGroup is each filter by the grouping of the same dimension.
func (f Filter) byGroup() map[api.InsightGroup]*string {
	return map[api.InsightGroup]*string{api.GroupProject: f.ProjectID, api.GroupAgent: f.AgentID,
		api.GroupRelease: f.ReleaseID, api.GroupKind: f.Kind}
}

// FilterOf reads the filters of the request parameters.
func FilterOf(p api.InsightParams) Filter {
	return Filter{ProjectID: p.ProjectID, AgentID: p.AgentID, ReleaseID: p.ReleaseID, Kind: p.Kind}
}

// Store reads the insights from the roll-ups (rollup.go).
type Store struct {
	db *sqldb.DB
	q  *queries
	rq *rollupQueries
	// direct: read the source tables with the direct statements (queries.go) instead of
	// the roll-ups: the reference the roll-ups are tested against.
	direct bool
	// cellsRead counts the roll-up cells the store's answers have read (what an answer
	// costs; the tests and benchmarks compare it).
	cellsRead atomic.Int64
}

// NewStore returns the insights reader of db.
func NewStore(db *sqldb.DB) *Store {
	return &Store{db: db, q: queriesFor(db.Dialect), rq: sqldb.QueriesFor(db.Dialect, &rollupSets)}
}

// Watermark is the time before which every committed change is counted in the roll-ups
// (the insights projector's last catch-up); ok is false while it has never caught up.
func (s *Store) Watermark(ctx context.Context) (time.Time, bool, error) {
	st, ok, err := feed.StatusOf(ctx, s.db, ProjectorName)
	if err != nil || !ok || st.CaughtUpAt.IsZero() {
		return time.Time{}, false, err
	}
	return st.CaughtUpAt, true, nil
}

// Now is the database's time (or the injected clock's), which a request's default window
// ends at, read in the tenant's scope.
func (s *Store) Now(ctx context.Context, tenantID string) (time.Time, error) {
	var now time.Time
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	return now, err
}

// Answer resolves the request's window at the database's time and reads it with read: what
// the API route and the console share.
func (s *Store) Answer(ctx context.Context, tenantID string, q api.InsightParams, group *api.InsightGroup,
	read func(ctx context.Context, tenantID string, w Window, f Filter) (any, error)) (any, error) {
	now, err := s.Now(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	w, err := Resolve(now, q, group)
	if err != nil {
		return nil, err
	}
	return read(ctx, tenantID, w, FilterOf(q))
}

// row is one (group, bucket, series) cell of a statement's answer.
type row struct {
	GroupKey sql.NullString `db:"GroupKey"`
	Bucket   int64          `db:"Bucket"`
	Series   string         `db:"Series"`
	N        int64          `db:"N"`
	Peak     int64          `db:"Peak"`
}

var boundsJSON = func() string {
	b, err := json.Marshal(api.DurationBoundsMs)
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// read answers one insight over the window in the tenant's scope: from the roll-ups, or
// with its direct statement when the store is the reference.
func (s *Store) read(ctx context.Context, tenantID string, in insight, w Window, f Filter) ([]row, error) {
	var rows []row
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		if !s.direct || in.direct == "" {
			// The roll-ups, also for the reference store when an insight has no direct
			// statement (usage: its test sums the scripted calls instead).
			var err error
			rows, err = s.readCells(ctx, tx, tenantID, in, w, f)
			return err
		}
		return tx.SelectContext(ctx, &rows, in.direct, tenantID, tx.Dialect.Time(w.From), tx.Dialect.Time(w.To),
			int64(w.Width()/time.Second), string(w.GroupBy), f.ProjectID, f.AgentID, f.ReleaseID, f.Kind,
			int64(api.InsightMaxGroups), tx.Dialect.JSON(boundsJSON))
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", in.name, err)
	}
	return rows, nil
}

// RunsEnded counts the runs ended in the window per bucket, group and outcome.
func (s *Store) RunsEnded(ctx context.Context, tenantID string, w Window, f Filter) (api.InsightSeries, error) {
	rows, err := s.read(ctx, tenantID, insight{name: "runs ended", direct: s.q.runsEnded, metric: metricRunsEnded}, w, f)
	return series(w, rows, api.RunOutcome("").EnumValues()), err
}

// AttemptsEnded counts the attempts ended in the window per bucket, group and state.
func (s *Store) AttemptsEnded(ctx context.Context, tenantID string, w Window, f Filter) (api.InsightSeries, error) {
	rows, err := s.read(ctx, tenantID, insight{name: "attempts ended", direct: s.q.attemptsEnded, metric: metricAttemptsEnded}, w, f)
	return series(w, rows, endedStates), err
}

// endedStates are the states an ended attempt can be in.
var endedStates = api.AttemptState(0).EnumValues()[1:]

// LeasesLost counts the attempts whose lease the reaper took back, per bucket and group.
func (s *Store) LeasesLost(ctx context.Context, tenantID string, w Window, f Filter) (api.InsightSeries, error) {
	rows, err := s.read(ctx, tenantID, insight{name: "leases lost", direct: s.q.leasesLost, metric: metricAttemptsEnded,
		series: api.AttemptLost.String()}, w, f)
	return series(w, rows, []string{api.AttemptLost.String()}), err
}

// AttemptsPerRun is the distribution of attempts per run ended in the window.
func (s *Store) AttemptsPerRun(ctx context.Context, tenantID string, w Window, f Filter) (api.AttemptsPerRun, error) {
	rows, err := s.read(ctx, tenantID, insight{name: "attempts per run", direct: s.q.attemptsPerRun, metric: metricAttemptsPerRun}, w, f)
	out := api.AttemptsPerRun{Window: w.Wire(), Groups: []api.AttemptsPerRunGroup{}}
	for _, g := range groupRows(rows) {
		grp := api.AttemptsPerRunGroup{InsightGroupKey: g.key, Counts: []api.AttemptsPerRunBin{}}
		for _, r := range g.rows {
			grp.Runs += r.N
			grp.Counts = append(grp.Counts, api.AttemptsPerRunBin{Attempts: int(r.Bucket), Runs: r.N})
		}
		sort.Slice(grp.Counts, func(i, j int) bool { return grp.Counts[i].Attempts < grp.Counts[j].Attempts })
		out.Groups = append(out.Groups, grp)
	}
	return out, err
}

// ClaimLatency summarises the time from enqueue to first claim of the runs queued in the
// window that have been claimed.
func (s *Store) ClaimLatency(ctx context.Context, tenantID string, w Window, f Filter) (api.ClaimLatency, error) {
	rows, err := s.read(ctx, tenantID, insight{name: "claim latency", direct: s.q.claimLatency, metric: metricClaimLatency}, w, f)
	out := api.ClaimLatency{Window: w.Wire(), Groups: []api.ClaimLatencyGroup{}}
	for _, g := range groupRows(rows) {
		var h histogram
		for _, r := range g.rows {
			h.add(r)
		}
		out.Groups = append(out.Groups, api.ClaimLatencyGroup{InsightGroupKey: g.key, Latency: h.summary()})
	}
	return out, err
}

// failedCall says which call statuses count as failures.
var failedCall = map[string]bool{
	string(api.CallFailed): true, string(api.CallDenied): true, string(api.CallAbandoned): true,
}

// Calls summarises the calls started in the window per target.
func (s *Store) Calls(ctx context.Context, tenantID string, w Window, f Filter) (api.CallInsights, error) {
	w.GroupBy = ""
	rows, err := s.read(ctx, tenantID, insight{name: "calls", direct: s.q.calls, metric: metricCalls,
		subkeyGroups: true}, w, f)
	out := api.CallInsights{Window: w.Wire(), Targets: []api.CallTargetInsight{}}
	for _, g := range groupRows(rows) {
		t := api.CallTargetInsight{InsightGroupKey: g.key}
		var h histogram
		for _, r := range g.rows {
			t.Calls += r.N
			if failedCall[r.Series] {
				t.Failed += r.N
			}
			h.add(r)
		}
		if t.Calls > 0 {
			t.FailureRate = float64(t.Failed) / float64(t.Calls)
		}
		t.Duration = h.summary()
		out.Targets = append(out.Targets, t)
	}
	return out, err
}

// Usage sums the usage and cost that calls reported when they finished in the window, per
// bucket, one series per api.UsageSeries, grouped by the window's group or, byModel, by the
// calls' model (a call that named none is the model "").
func (s *Store) Usage(ctx context.Context, tenantID string, w Window, f Filter, byModel bool) (api.InsightSeries, error) {
	if byModel {
		w.GroupBy = ""
	}
	rows, err := s.read(ctx, tenantID, insight{name: "usage", metric: metricUsage, subkeyGroups: byModel}, w, f)
	return series(w, rows, api.UsageSeries), err
}

// Decisions summarises the decisions requested in the window per decision kind.
func (s *Store) Decisions(ctx context.Context, tenantID string, w Window, f Filter) (api.DecisionInsights, error) {
	w.GroupBy = ""
	rows, err := s.read(ctx, tenantID, insight{name: "decisions", direct: s.q.decisions, metric: metricDecisions,
		subkeyGroups: true}, w, f)
	out := api.DecisionInsights{Window: w.Wire(), Kinds: []api.DecisionKindInsight{}}
	byKind := map[string]*api.DecisionKindInsight{}
	hists := map[string]*histogram{}
	for _, name := range api.DecisionKind(0).EnumValues() {
		var k api.DecisionKind
		_ = k.UnmarshalText([]byte(name))
		out.Kinds = append(out.Kinds, api.DecisionKindInsight{Kind: k})
		hists[name] = &histogram{}
	}
	for i := range out.Kinds {
		byKind[out.Kinds[i].Kind.String()] = &out.Kinds[i]
	}
	for _, r := range rows {
		k, ok := byKind[r.GroupKey.String]
		if !ok {
			continue
		}
		k.Requested += r.N
		switch api.DecisionStatus(r.Series) {
		case api.DecisionApproved, api.DecisionRejected:
			k.Answered += r.N
		case api.DecisionExpired:
			k.Expired += r.N
		case api.DecisionCancelled:
			k.Cancelled += r.N
		case api.DecisionPending:
			k.Pending += r.N
		}
		hists[r.GroupKey.String].add(r)
	}
	for i := range out.Kinds {
		out.Kinds[i].TimeToAnswer = hists[out.Kinds[i].Kind.String()].summary()
	}
	return out, err
}

// group is one group's rows.
type group struct {
	key   api.InsightGroupKey
	total int64
	rows  []row
}

// groupRows gathers rows by group, largest first (then by key), other last.
func groupRows(rows []row) []*group {
	byKey := map[api.InsightGroupKey]*group{}
	var out []*group
	for _, r := range rows {
		k := api.InsightGroupKey{Key: r.GroupKey.String, Other: !r.GroupKey.Valid}
		g, ok := byKey[k]
		if !ok {
			g = &group{key: k}
			byKey[k] = g
			out = append(out, g)
		}
		g.total += r.N
		g.rows = append(g.rows, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.key.Other != b.key.Other {
			return b.key.Other
		}
		if a.total != b.total {
			return a.total > b.total
		}
		return a.key.Key < b.key.Key
	})
	return out
}

// series shapes rows of (group, bucket, series) counts into per-bucket lists, one per
// series name in names' order (every name, zeros included, so charts keep their colours).
func series(w Window, rows []row, names []string) api.InsightSeries {
	out := api.InsightSeries{Window: w.Wire(), Buckets: []api.Time{}, Groups: []api.InsightSeriesGroup{}}
	for _, t := range w.Starts() {
		out.Buckets = append(out.Buckets, api.NewTime(t))
	}
	n := len(out.Buckets)
	for _, g := range groupRows(rows) {
		grp := api.InsightSeriesGroup{InsightGroupKey: g.key, Series: make([]api.InsightCounts, len(names))}
		index := map[string]int{}
		for i, name := range names {
			grp.Series[i] = api.InsightCounts{Name: name, Counts: make([]int64, n)}
			index[name] = i
		}
		for _, r := range g.rows {
			i, ok := index[r.Series]
			if !ok || r.Bucket < 0 || r.Bucket >= int64(n) {
				continue // outside the window's buckets or series: cannot happen with the statements' bounds
			}
			grp.Series[i].Counts[r.Bucket] += r.N
			grp.Series[i].Total += r.N
			grp.Total += r.N
		}
		out.Groups = append(out.Groups, grp)
	}
	return out
}

// histogram counts durations in the bins of api.DurationBoundsMs (bin len(bounds): longer).
type histogram struct {
	bins  [32]int64
	count int64
	max   int64
}

// add counts a row whose Bucket is a histogram bin (a negative bin has no duration).
func (h *histogram) add(r row) {
	if r.Bucket < 0 || r.Bucket > int64(len(api.DurationBoundsMs)) {
		return
	}
	h.bins[r.Bucket] += r.N
	h.count += r.N
	h.max = max(h.max, r.Peak)
}

// percentile is the upper bound of the bin holding the pct-th percentile of the durations
// (the one of rank ceil(pct*count/100)), at most the largest duration seen.
func (h *histogram) percentile(pct int64) int64 {
	rank := max((pct*h.count+99)/100, 1)
	var seen int64
	for i, n := range h.bins[:len(api.DurationBoundsMs)+1] {
		seen += n
		if seen >= rank {
			if i < len(api.DurationBoundsMs) {
				return min(api.DurationBoundsMs[i], h.max)
			}
			break
		}
	}
	return h.max
}

func (h *histogram) summary() api.DurationSummary {
	out := api.DurationSummary{Count: h.count}
	if h.count > 0 {
		out.P50Ms, out.P95Ms, out.MaxMs = api.Ptr(h.percentile(50)), api.Ptr(h.percentile(95)), api.Ptr(h.max)
	}
	return out
}
