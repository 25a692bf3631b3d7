package api

// Insights (DESIGN.md section 5a): aggregate history over a bounded window, for admins.

// InsightBucket is the width of one bucket of an insight's window.
type InsightBucket string

// Bucket widths.
const (
	Bucket5m InsightBucket = "5m"
	Bucket1h InsightBucket = "1h"
	Bucket1d InsightBucket = "1d"
)

var insightBucketNames = names{"5m", "1h", "1d"}

func (v InsightBucket) String() string     { return string(v) }
func (v InsightBucket) Valid() bool        { _, ok := insightBucketNames.index(string(v)); return ok }
func (InsightBucket) EnumValues() []string { return insightBucketNames.values() }
func (v InsightBucket) MarshalText() ([]byte, error) {
	return insightBucketNames.marshalString(string(v), "bucket")
}
func (v *InsightBucket) UnmarshalText(b []byte) error {
	s, err := insightBucketNames.unmarshalString(b)
	*v = InsightBucket(s)
	return err
}
func (v *InsightBucket) UnmarshalJSON(b []byte) error {
	s, err := insightBucketNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// InsightGroup is what an insight's numbers are grouped by. A run's release is the release
// of its latest attempt; an attempt's (or call's, or decision's) kind is its run's kind; a
// run's error code is its last error's (an attempt's its own; "" when none).
type InsightGroup string

// Groupings.
const (
	GroupProject InsightGroup = "project"
	GroupAgent   InsightGroup = "agent"
	GroupRelease InsightGroup = "release"
	GroupKind    InsightGroup = "kind"
	// GroupErrorCode groups by error code (DESIGN.md section 5b: why runs failed).
	GroupErrorCode InsightGroup = "errorCode"
)

var insightGroupNames = names{"project", "agent", "release", "kind", "errorCode"}

func (v InsightGroup) String() string     { return string(v) }
func (v InsightGroup) Valid() bool        { _, ok := insightGroupNames.index(string(v)); return ok }
func (InsightGroup) EnumValues() []string { return insightGroupNames.values() }
func (v InsightGroup) MarshalText() ([]byte, error) {
	return insightGroupNames.marshalString(string(v), "grouping")
}
func (v *InsightGroup) UnmarshalText(b []byte) error {
	s, err := insightGroupNames.unmarshalString(b)
	*v = InsightGroup(s)
	return err
}
func (v *InsightGroup) UnmarshalJSON(b []byte) error {
	s, err := insightGroupNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// Bounds of an insight's window (DESIGN.md section 5a).
const (
	// InsightMaxBuckets is the most buckets a window may hold.
	InsightMaxBuckets = 500
	// InsightMaxGroups is the most groups an answer names; the rest are summed in one
	// group marked other.
	InsightMaxGroups = 50
	// DefaultInsightBucket is the bucket of a request that names none.
	DefaultInsightBucket = Bucket1h
)

// InsightParams are the query parameters of every GET /v1/insights/… route: the window and
// the filters.
type InsightParams struct {
	From      *Time          `query:"from" doc:"Start of the window (inclusive), rounded down to a bucket boundary (UTC). Default: to minus 24 hours."`
	To        *Time          `query:"to" doc:"End of the window (exclusive), rounded up to a bucket boundary (UTC). Default: now."`
	Bucket    *InsightBucket `query:"bucket" default:"1h" doc:"The width of a bucket; a window holds at most 500 buckets."`
	ProjectID *string        `query:"projectId" validate:"omitempty,segment=64" doc:"Only this project's."`
	AgentID   *string        `query:"agentId" validate:"omitempty,segment=128" doc:"Only this agent's."`
	ReleaseID *string        `query:"releaseId" validate:"omitempty,segment=256" doc:"Only this release's (a run's release is its latest attempt's)."`
	Kind      *string        `query:"kind" validate:"omitempty,ident=64" doc:"Only runs of this kind (and their attempts, calls and decisions)."`
}

// InsightGroupedParams are InsightParams and a grouping, for the insights that group.
type InsightGroupedParams struct {
	InsightParams
	GroupBy *InsightGroup `query:"groupBy" doc:"Group the numbers by this (at most 50 groups, largest first; the rest are summed as other)."`
}

// InsightWindow is the window an insight answers for, after rounding.
type InsightWindow struct {
	From    Time          `json:"from"`
	To      Time          `json:"to"`
	Bucket  InsightBucket `json:"bucket"`
	GroupBy *InsightGroup `json:"groupBy,omitempty"`
}

// InsightSeries counts events per bucket, per group, per series (an outcome or a state).
type InsightSeries struct {
	Window InsightWindow `json:"window"`
	// Buckets are the start times of the window's buckets, oldest first; every counts list
	// has one number per bucket, in this order.
	Buckets []Time               `json:"buckets"`
	Groups  []InsightSeriesGroup `json:"groups"`
}

// InsightGroupKey names a group: Key is the project, agent, release or kind ("" when the
// answer is not grouped); Other marks the sum of the groups past the largest 50 (Key "").
type InsightGroupKey struct {
	Key   string `json:"key"`
	Other bool   `json:"other,omitempty"`
}

// GroupKey is k: every insight's group type embeds InsightGroupKey, and this method lets
// code read the key of any of them.
func (k InsightGroupKey) GroupKey() InsightGroupKey { return k }

// InsightSeriesGroup is one group's counts, largest group first.
type InsightSeriesGroup struct {
	InsightGroupKey
	Total  int64           `json:"total"`
	Series []InsightCounts `json:"series"`
}

// InsightCounts is one series of a group: its name (an outcome or a state) and its count
// per bucket.
type InsightCounts struct {
	Name   string  `json:"name"`
	Total  int64   `json:"total"`
	Counts []int64 `json:"counts"`
}

// DurationSummary summarises durations in milliseconds. Percentiles come from fixed
// histogram buckets counted in the database (bounds 10 ms … 1 day, see DurationBoundsMs):
// a percentile is the upper bound of the bucket that holds it, or the largest duration
// seen when that is smaller. The percentiles are absent when Count is 0.
type DurationSummary struct {
	Count int64  `json:"count"`
	P50Ms *int64 `json:"p50Ms,omitempty"`
	P95Ms *int64 `json:"p95Ms,omitempty"`
	MaxMs *int64 `json:"maxMs,omitempty"`
}

// DurationBoundsMs are the upper bounds (inclusive, in milliseconds) of the histogram
// buckets durations are counted in; a last bucket holds everything longer.
var DurationBoundsMs = []int64{
	10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
	1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
}

// AttemptsPerRun is the distribution of attempts per run ended in the window.
type AttemptsPerRun struct {
	Window InsightWindow         `json:"window"`
	Groups []AttemptsPerRunGroup `json:"groups"`
}

// AttemptsPerRunGroup is one group's distribution, largest group first.
type AttemptsPerRunGroup struct {
	InsightGroupKey
	Runs   int64               `json:"runs"`
	Counts []AttemptsPerRunBin `json:"counts"`
}

// AttemptsPerRunBin counts the runs that ended after Attempts attempts (the last bin,
// AttemptsPerRunCap, counts that many or more), in increasing order of Attempts.
type AttemptsPerRunBin struct {
	Attempts int   `json:"attempts"`
	Runs     int64 `json:"runs"`
}

// AttemptsPerRunCap is the last bin of the distribution: runs with this many attempts or more.
const AttemptsPerRunCap = 20

// ClaimLatency is the time from enqueue to first claim of the runs queued in the window
// that have been claimed.
type ClaimLatency struct {
	Window InsightWindow       `json:"window"`
	Groups []ClaimLatencyGroup `json:"groups"`
}

// ClaimLatencyGroup is one group's time to first claim, largest group first.
type ClaimLatencyGroup struct {
	InsightGroupKey
	Latency DurationSummary `json:"latency"`
}

// CallInsights summarises the calls started in the window, per target (at most 50 targets,
// the rest summed as other), most calls first.
type CallInsights struct {
	Window  InsightWindow       `json:"window"`
	Targets []CallTargetInsight `json:"targets"`
}

// CallTargetInsight is one target's calls: Failed counts the failed, denied and abandoned
// ones, FailureRate is Failed / Calls, Duration covers the calls that ended.
type CallTargetInsight struct {
	InsightGroupKey
	Calls       int64           `json:"calls"`
	Failed      int64           `json:"failed"`
	FailureRate float64         `json:"failureRate"`
	Duration    DurationSummary `json:"duration"`
}

// DecisionInsights summarises the decisions requested in the window, per decision kind.
type DecisionInsights struct {
	Window InsightWindow         `json:"window"`
	Kinds  []DecisionKindInsight `json:"kinds"`
}

// DecisionKindInsight is one decision kind's numbers: Answered counts the approved and
// rejected ones, TimeToAnswer their time from request to answer.
type DecisionKindInsight struct {
	Kind         DecisionKind    `json:"kind"`
	Requested    int64           `json:"requested"`
	Answered     int64           `json:"answered"`
	Expired      int64           `json:"expired"`
	Cancelled    int64           `json:"cancelled"`
	Pending      int64           `json:"pending"`
	TimeToAnswer DurationSummary `json:"timeToAnswer"`
}

// UsageGroup is what GET /v1/insights/usage groups by: the calls' model, or the run's
// agent, release (its attempt's) or project.
type UsageGroup string

// Usage groupings.
const (
	UsageByModel   UsageGroup = "model"
	UsageByAgent   UsageGroup = "agent"
	UsageByRelease UsageGroup = "release"
	UsageByProject UsageGroup = "project"
)

var usageGroupNames = names{"model", "agent", "release", "project"}

func (v UsageGroup) String() string     { return string(v) }
func (v UsageGroup) Valid() bool        { _, ok := usageGroupNames.index(string(v)); return ok }
func (UsageGroup) EnumValues() []string { return usageGroupNames.values() }
func (v UsageGroup) MarshalText() ([]byte, error) {
	return usageGroupNames.marshalString(string(v), "usage grouping")
}
func (v *UsageGroup) UnmarshalText(b []byte) error {
	s, err := usageGroupNames.unmarshalString(b)
	*v = UsageGroup(s)
	return err
}
func (v *UsageGroup) UnmarshalJSON(b []byte) error {
	s, err := usageGroupNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// UsageSeries are the series of GET /v1/insights/usage, in their order: the calls that
// reported usage or a cost, then each token count, then the cost in micro-units.
var UsageSeries = []string{"calls", "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
	"reasoningOutputTokens", "costMicros"}

// InsightUsageParams are InsightParams and a usage grouping.
type InsightUsageParams struct {
	InsightParams
	GroupBy *UsageGroup `query:"groupBy" doc:"Group the numbers by this (at most 50 groups, largest first; the rest are summed as other)."`
}
