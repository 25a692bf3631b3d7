package insights

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The roll-ups (DESIGN.md 5a and 5b): the insights projector (a feed.Projector) turns each
// committed run, attempt, call and decision into facts, and counts each fact in one cell per
// grain (InsightCells: tenant, metric, grain, bucket, dimensions -> N and the largest value,
// Peak). An insight then reads the cells of its window's buckets, at most buckets x
// dimension combinations x series x histogram bins rows whatever the history holds, and
// shapes them exactly as the direct statements' rows (queries.go) were shaped, so the
// answers are the same numbers.
//
// What each source row contributes is kept in InsightFacts, so a row seen again (its Version
// moved: a heartbeat, a call finished, a decision answered) moves its counts from the old
// cells to the new ones instead of counting twice. Peak only grows: the facts a row can take
// back are the open ones (a call not ended, a decision not answered: histogram bin -1, value
// 0), and a fact with a duration never changes once written, so Peak stays the largest value
// among the cell's facts.
//
// Retention: purged rows never appear in the change feed, so the roll-ups keep counting
// them: a purge does not change an answer about the past (the direct statements would
// forget the purged runs). A claim's latency is grouped and filtered by the release of the
// first claim, the claim it measures (fixed once claimed); the direct statement took the
// run's latest attempt's, which moved when a later claim ran another release.

// metric names what a cell counts.
type metric int8

const (
	metricRunsEnded metric = iota + 1
	metricAttemptsPerRun
	metricClaimLatency
	metricAttemptsEnded
	metricCalls
	metricDecisions
	// metricUsage sums what finished calls reported: N is the sum of a series (calls,
	// inputTokens, …, costMicros), the Subkey the call's model.
	metricUsage
)

// grains are the bucket widths every fact is counted in, so an answer of any bucket reads
// its own buckets' cells only (a 500-day answer by day reads 500 buckets, not 144,000).
var grains = []time.Duration{5 * time.Minute, time.Hour, 24 * time.Hour}

// coarseGrain is a further grain of the binned metrics only (binned): their answers are
// the window's totals per bin, not a series, so a window reads the widest cells that tile
// it and the finer ones only at its ends (spans). On the 502k-run set a day fills every
// (target, status, duration bin) cell of the calls, 84 cells a day: a 500-day calls
// request read 42,000 cells (139 ms of CPU); with 16-day cells it reads at most 31 of them
// and 2 x 15 days at the ends, 4,200 cells (10 ms; docs/perf/issue-35.md). Each grain
// divides the next; 16 days, about sqrt(500 days / 2), balances the middle's cells against
// the ends'. Epoch-aligned as the other grains are.
const coarseGrain = 16 * 24 * time.Hour

// binned are the metrics answered as totals per bin over the window (a row's Bucket is the
// cell's histogram or attempts bin, not its time bucket), which are also counted in
// coarseGrain.
var binned = map[metric]bool{metricAttemptsPerRun: true, metricClaimLatency: true, metricCalls: true, metricDecisions: true}

// grainsOf are the grains a metric's facts are counted in.
func grainsOf(m metric, coarse bool) []time.Duration {
	if coarse && binned[m] {
		return allGrains
	}
	return grains
}

var allGrains = append(slices.Clone(grains), coarseGrain)

// span is one grain's bucket range [lo, hi) of a window.
type span struct{ grain, lo, hi int64 }

// spans tiles [lo, hi) (aligned to chain[0]) with the widest buckets of chain (ascending
// widths, each dividing the next) that fit, and the narrower ones only at the ends: at
// most one range per grain on each side of the widest.
func spans(lo, hi int64, chain []int64) []span {
	if lo >= hi {
		return nil
	}
	for i := len(chain) - 1; i >= 0; i-- {
		g := chain[i]
		a, b := lo+mod(-lo, g), hi-mod(hi, g)
		if a < b {
			return append(append(spans(lo, a, chain[:i]), span{g, a, b}), spans(b, hi, chain[:i])...)
		}
	}
	return nil // unreachable: lo and hi are aligned to chain[0]
}

// dims are the dimensions every cell carries: what an insight groups by and filters on.
// dimensions below is the one list of them; a new grouping adds a field, a column of
// InsightCells and an entry there.
type dims struct {
	Project string `json:"p"`
	Agent   string `json:"a"`
	Release string `json:"r"`
	Kind    string `json:"k"`
	// ErrorCode is a run's or an attempt's error code (calls and decisions have none).
	ErrorCode string `json:"x,omitempty"`
}

// dimension is one grouping of the insights: the api's name, the cell's value for it, and
// the cell's dimensions with only this one kept.
type dimension struct {
	group api.InsightGroup
	value func(dims) string
	only  func(dims) dims
}

var dimensions = []dimension{
	{api.GroupProject, func(d dims) string { return d.Project }, func(d dims) dims { return dims{Project: d.Project} }},
	{api.GroupAgent, func(d dims) string { return d.Agent }, func(d dims) dims { return dims{Agent: d.Agent} }},
	{api.GroupRelease, func(d dims) string { return d.Release }, func(d dims) dims { return dims{Release: d.Release} }},
	{api.GroupKind, func(d dims) string { return d.Kind }, func(d dims) dims { return dims{Kind: d.Kind} }},
	{api.GroupErrorCode, func(d dims) string { return d.ErrorCode }, func(d dims) dims { return dims{ErrorCode: d.ErrorCode} }},
}

// A dimension set says which dimensions a cell keeps: every fact is counted once in each
// set, so a request reads the set with just the dimensions it groups or filters by, and a
// 500-bucket answer grouped by one dimension reads at most buckets x that dimension's
// groups x series x bins cells, whatever the other dimensions hold.
const (
	// dimsAll keeps every dimension: a request that groups or filters by two or more.
	dimsAll int8 = 0
	// dimsNone keeps none: a request that neither groups nor filters.
	dimsNone int8 = 1
	// dimsOne+i keeps dimensions[i] only.
	dimsOne int8 = 2
)

// dimSets are the dimension sets every fact is counted in.
var dimSets = func() []int8 {
	out := []int8{dimsAll, dimsNone}
	for i := range dimensions {
		out = append(out, dimsOne+int8(i))
	}
	return out
}()

// keep is d with only the dimensions of set.
func keep(set int8, d dims) dims {
	switch {
	case set == dimsAll:
		return d
	case set == dimsNone:
		return dims{}
	}
	return dimensions[set-dimsOne].only(d)
}

// setFor is the smallest dimension set that answers a request grouping by g ("" for none)
// and filtering by f.
func setFor(g api.InsightGroup, f Filter) int8 {
	used := map[api.InsightGroup]bool{}
	if g != "" {
		used[g] = true
	}
	for grp, v := range f.byGroup() {
		if v != nil {
			used[grp] = true
		}
	}
	switch len(used) {
	case 0:
		return dimsNone
	case 1:
		for i, d := range dimensions {
			if used[d.group] {
				return dimsOne + int8(i)
			}
		}
	}
	return dimsAll
}

// groupValue is the cell's value of grouping g ("" when the insight is not grouped).
func groupValue(g api.InsightGroup, d dims) string {
	for _, dim := range dimensions {
		if dim.group == g {
			return dim.value(d)
		}
	}
	return ""
}

// fact is one contribution of a source row to one cell of each grain.
type fact struct {
	Metric metric `json:"m"`
	// At is the event's time in Unix seconds (whole seconds, as the direct statements'
	// bucket arithmetic counts them).
	At     int64  `json:"t"`
	Dims   dims   `json:"d"`
	Subkey string `json:"s,omitempty"` // a call's target, a decision's kind
	Series string `json:"e,omitempty"`
	Bin    int    `json:"b,omitempty"`
	Value  int64  `json:"v,omitempty"`
	// Weight is what the fact adds to its cell's N (0: 1, a count; a usage fact adds its
	// tokens or cost).
	Weight int64 `json:"w,omitempty"`
}

// cellKey is a cell of one grain.
type cellKey struct {
	tenant string
	metric metric
	set    int8
	grain  int64
	bucket int64
	dims   dims
	subkey string
	series string
	bin    int
}

func (k cellKey) hash() []byte {
	h := sha256.New()
	for _, s := range []string{k.dims.Project, k.dims.Agent, k.dims.Release, k.dims.Kind, k.dims.ErrorCode, k.subkey, k.series,
		fmt.Sprint(k.bin)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// bin is the histogram bin of a duration: the number of bounds below it.
func bin(ms int64) int {
	n := 0
	for _, b := range api.DurationBoundsMs {
		if b < ms {
			n++
		}
	}
	return n
}

// Sources of the facts (InsightFacts.Source).
const (
	sourceRun int8 = iota + 1
	sourceAttempt
	sourceCall
	sourceDecision
)

// sourceRow is one changed row of any source table, as the projector's statements read it
// (each fills what its table has).
type sourceRow struct {
	Source   int8             `db:"Source"`
	ID       uuid.UUID        `db:"Id"`
	TenantID string           `db:"TenantId"`
	Version  sqldb.RowVersion `db:"Version"`
	State    sql.NullInt64    `db:"State"`
	Status   sql.NullString   `db:"Status"`
	Project  sql.NullString   `db:"ProjectId"`
	Agent    sql.NullString   `db:"AgentId"`
	Release  sql.NullString   `db:"ReleaseId"`
	Kind     sql.NullString   `db:"Kind"`
	Subkey   sql.NullString   `db:"Subkey"`
	// Start: a run's QueuedAt, a call's StartedAt, a decision's RequestedAt; End: EndedAt
	// or AnsweredAt.
	Start sqldb.NullTime `db:"StartAt"`
	End   sqldb.NullTime `db:"EndAt"`
	// A run's attempts: the first claim's time and release, the latest attempt's release,
	// how many.
	FirstClaim   sqldb.NullTime `db:"FirstClaimAt"`
	FirstRelease sql.NullString `db:"FirstRelease"`
	LastRelease  sql.NullString `db:"LastRelease"`
	Attempts     sql.NullInt64  `db:"Attempts"`
	// ErrorCode: a run's or an attempt's; the rest, what a finished call reported.
	ErrorCode                sql.NullString `db:"ErrorCode"`
	Model                    sql.NullString `db:"Model"`
	InputTokens              sql.NullInt64  `db:"InputTokens"`
	OutputTokens             sql.NullInt64  `db:"OutputTokens"`
	CacheReadInputTokens     sql.NullInt64  `db:"CacheReadInputTokens"`
	CacheCreationInputTokens sql.NullInt64  `db:"CacheCreationInputTokens"`
	ReasoningOutputTokens    sql.NullInt64  `db:"ReasoningOutputTokens"`
	CostMicros               sql.NullInt64  `db:"CostMicros"`
}

func (r sourceRow) dims() dims {
	return dims{Project: r.Project.String, Agent: r.Agent.String, Release: r.Release.String, Kind: r.Kind.String,
		ErrorCode: r.ErrorCode.String}
}

// Usage series: what a usage cell's N sums.
const (
	usageCalls         = "calls"
	usageInput         = "inputTokens"
	usageOutput        = "outputTokens"
	usageCacheRead     = "cacheReadInputTokens"
	usageCacheCreation = "cacheCreationInputTokens"
	usageReasoning     = "reasoningOutputTokens"
	usageCost          = "costMicros"
)

// usageFacts are a finished call's usage facts, counted at its end: one per reported count
// above zero, and one call (only when it reported any).
func (r sourceRow) usageFacts() []fact {
	if !r.End.Valid {
		return nil
	}
	var out []fact
	for _, c := range []struct {
		series string
		n      sql.NullInt64
	}{{usageInput, r.InputTokens}, {usageOutput, r.OutputTokens}, {usageCacheRead, r.CacheReadInputTokens},
		{usageCacheCreation, r.CacheCreationInputTokens}, {usageReasoning, r.ReasoningOutputTokens}, {usageCost, r.CostMicros}} {
		if c.n.Valid && c.n.Int64 > 0 {
			out = append(out, fact{Metric: metricUsage, At: r.End.Time.Unix(), Dims: r.dims(), Subkey: r.Model.String,
				Series: c.series, Weight: c.n.Int64})
		}
	}
	if len(out) > 0 {
		out = append(out, fact{Metric: metricUsage, At: r.End.Time.Unix(), Dims: r.dims(), Subkey: r.Model.String,
			Series: usageCalls})
	}
	return out
}

func ms(from, to time.Time) int64 { return to.Sub(from).Milliseconds() }

// runEnded is the Runs.State of an ended run; attemptStates names ended attempt states
// as the direct statement does.
const runEnded = 2

func attemptState(s int64) string {
	switch s {
	case 1:
		return "succeeded"
	case 2:
		return "failed"
	case 3:
		return "cancelled"
	case 4:
		return "lost"
	case 6:
		return "parked"
	default:
		return "released"
	}
}

func decisionKind(k string) string {
	switch k {
	case "0":
		return "approval"
	case "1":
		return "choice"
	default:
		return "input"
	}
}

// facts are what r contributes now, in a fixed order (compared as their JSON).
func (r sourceRow) facts() []fact {
	var out []fact
	switch r.Source {
	case sourceRun:
		d := r.dims()
		if r.FirstClaim.Valid && r.Start.Valid {
			cd := d
			cd.Release = r.FirstRelease.String
			v := ms(r.Start.Time, r.FirstClaim.Time)
			out = append(out, fact{Metric: metricClaimLatency, At: r.Start.Time.Unix(), Dims: cd, Bin: bin(v), Value: v})
		}
		if r.State.Int64 == runEnded && r.End.Valid {
			d.Release = r.LastRelease.String
			out = append(out,
				fact{Metric: metricRunsEnded, At: r.End.Time.Unix(), Dims: d, Series: r.Status.String},
				fact{Metric: metricAttemptsPerRun, At: r.End.Time.Unix(), Dims: d, Bin: int(min(r.Attempts.Int64, api.AttemptsPerRunCap))})
		}
	case sourceAttempt:
		if s := r.State.Int64; s >= 1 && s <= 6 && r.End.Valid {
			out = append(out, fact{Metric: metricAttemptsEnded, At: r.End.Time.Unix(), Dims: r.dims(), Series: attemptState(s)})
		}
	case sourceCall:
		f := fact{Metric: metricCalls, At: r.Start.Time.Unix(), Dims: r.dims(), Subkey: r.Subkey.String, Series: r.Status.String, Bin: -1}
		if r.End.Valid {
			f.Value = ms(r.Start.Time, r.End.Time)
			f.Bin = bin(f.Value)
		}
		out = append(out, f)
		out = append(out, r.usageFacts()...)
	case sourceDecision:
		f := fact{Metric: metricDecisions, At: r.Start.Time.Unix(), Dims: r.dims(), Subkey: decisionKind(r.Subkey.String),
			Series: r.Status.String, Bin: -1}
		if (f.Series == string(api.DecisionApproved) || f.Series == string(api.DecisionRejected)) && r.End.Valid {
			f.Value = ms(r.Start.Time, r.End.Time)
			f.Bin = bin(f.Value)
		}
		out = append(out, f)
	}
	return out
}

// ProjectorName keys the insights projector's position and lease.
const ProjectorName = "insights"

// DefaultBatch is how many changed rows of each source table one projector step reads.
// Live traffic's rows share their cells (one minute's calls of one target land in the same
// 18), and a step's cost is mostly one upsert per cell it touched: under the HTTP append
// workload, batches of 64 spent 14 % of the server's CPU in the projector, of 512 about
// 7 % (docs/perf/issue-35.md). A backfill's rows each land in cells of their own, which
// maxStepCells bounds.
const DefaultBatch = 512

// maxStepCells bounds the cells one step writes (one upsert each), and so how long a
// step holds the single writer: what a step of 64 rows, 18 cells each, wrote at most
// before. A step applies whole versions in version order until it has this many, then
// stops at the next version; it always applies one.
const maxStepCells = 2048

// minBatch is the least a step reads of each table once the cell budget has cut steps
// short.
const minBatch = 16

// Projector maintains the roll-ups from the change feed; run it with feed.Runner, which
// calls Project from one goroutine at a time.
type Projector struct {
	q     *rollupQueries
	batch int
	// cells is the step's cell budget (maxStepCells).
	cells int
	// limit is what the next step reads of each table: batch, or after a step the cell
	// budget cut short (a backfill, whose rows each have cells of their own) about what
	// that step applied, so that a step does not read rows only to leave them to the next
	// one; it doubles back towards batch with each step the budget does not cut.
	limit int
	// coarse: count the coarse cells and keep them complete (false only in the tests, as a
	// binary before migration 000042 projected).
	coarse bool
}

// NewProjector returns the insights projector for db's dialect, reading at most batch
// changed rows of each source table per step (0: DefaultBatch).
func NewProjector(db *sqldb.DB, batch int) *Projector {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Projector{q: sqldb.QueriesFor(db.Dialect, &rollupSets), batch: batch, cells: maxStepCells, limit: batch, coarse: true}
}

// Name implements feed.Projector.
func (p *Projector) Name() string { return ProjectorName }

// Project implements feed.Projector: it reads up to a batch of each source table's rows
// changed after `after` and below ceiling, applies those up to the lowest last version of
// a table whose batch was full (past it that table may have more rows not yet read), and
// returns that version.
func (p *Projector) Project(ctx context.Context, tx *sqldb.Tx, after, ceiling sqldb.RowVersion) (sqldb.RowVersion, error) {
	if p.coarse {
		if err := p.coarseCells(ctx, tx); err != nil {
			return 0, err
		}
	}
	sources := []string{p.q.runs, p.q.attempts, p.q.calls, p.q.decisions}
	var rows []sourceRow
	through, err := feed.ReadBatch(after, ceiling, p.limit, func(upTo sqldb.RowVersion, limit int) (sqldb.RowVersion, error) {
		cut := upTo - 1
		rows = nil
		for _, q := range sources {
			var got []sourceRow
			if err := tx.SelectContext(ctx, &got, q, tx.Dialect.Version(after), tx.Dialect.Version(upTo), limit); err != nil {
				return 0, fmt.Errorf("read changed rows: %w", err)
			}
			if len(got) == limit {
				// The batch's last version may continue past it: apply only what is before.
				cut = min(cut, got[len(got)-1].Version-1)
			}
			rows = append(rows, got...)
		}
		return cut, nil
	})
	if err != nil {
		return 0, err
	}
	// Whole versions in order, so that stopping at the cell budget leaves every row up to
	// the answered version applied and none past it. Rows apply independently (each moves
	// its own facts), so the order changes no cell.
	slices.SortStableFunc(rows, func(a, b sourceRow) int { return cmp.Compare(a.Version, b.Version) })
	deltas := map[cellKey]*cellDelta{}
	p.limit = min(p.batch, 2*p.limit)
	applied := map[int8]int{} // rows applied by source
	for i := 0; i < len(rows) && rows[i].Version <= through; {
		v := rows[i].Version
		if i > 0 && len(deltas) >= p.cells {
			through = v - 1
			most := 0
			for _, n := range applied {
				most = max(most, n)
			}
			p.limit = max(minBatch, min(p.batch, most+most/4))
			break
		}
		for ; i < len(rows) && rows[i].Version == v; i++ {
			applied[rows[i].Source]++
			if err := p.apply(ctx, tx, rows[i], deltas); err != nil {
				return 0, err
			}
		}
	}
	if err := p.write(ctx, tx, deltas); err != nil {
		return 0, err
	}
	// The runner moves Position to through in this transaction: the coarse cells are
	// complete through it.
	if p.coarse {
		if _, err := tx.ExecContext(ctx, p.q.markCoarse, ProjectorName, tx.Dialect.Version(through)); err != nil {
			return 0, fmt.Errorf("mark the coarse cells: %w", err)
		}
	}
	return through, nil
}

// coarseCells makes the coarse cells complete through the position the step starts from
// when they are not (CoarseThrough is not Position: the first step after migration 000042,
// or an older binary's projector moved Position without counting them): it derives them
// again from the daily cells, which every binary keeps, in the step's transaction, so a
// crash leaves them as they were and the next step does it again.
func (p *Projector) coarseCells(ctx context.Context, tx *sqldb.Tx) error {
	if complete, err := coarseComplete(ctx, tx, p.q); complete || err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, p.q.clearCoarse, int64(coarseGrain/time.Second)); err != nil {
		return fmt.Errorf("clear the coarse cells: %w", err)
	}
	if _, err := tx.ExecContext(ctx, p.q.buildCoarse, int64(coarseGrain/time.Second), int64(24*time.Hour/time.Second)); err != nil {
		return fmt.Errorf("derive the coarse cells: %w", err)
	}
	return nil
}

type cellDelta struct {
	n    int64
	peak int64
}

func (p *Projector) apply(ctx context.Context, tx *sqldb.Tx, r sourceRow, deltas map[cellKey]*cellDelta) error {
	now := r.facts()
	if len(now) == 0 && r.Source != sourceCall && r.Source != sourceDecision {
		// A run never claimed nor ended, an attempt not ended: it has never contributed
		// either (claims and ends are not undone), so there is nothing to read or move.
		return nil
	}
	enc, err := json.Marshal(now)
	if err != nil {
		return err
	}
	var old []fact
	var stored []string
	if err := tx.SelectContext(ctx, &stored, p.q.factsOf, r.TenantID, r.Source, r.ID); err != nil {
		return fmt.Errorf("read a row's facts: %w", err)
	}
	if len(stored) == 1 {
		if stored[0] == string(enc) {
			return nil // seen before, nothing changed that the roll-ups count
		}
		if err := json.Unmarshal([]byte(stored[0]), &old); err != nil {
			return fmt.Errorf("stored facts of %s: %w", r.ID, err)
		}
	}
	for _, f := range old {
		count(deltas, r.TenantID, f, -1, p.coarse)
	}
	for _, f := range now {
		count(deltas, r.TenantID, f, 1, p.coarse)
	}
	if len(stored) == 1 {
		_, err = tx.ExecContext(ctx, p.q.updateFacts, r.TenantID, r.Source, r.ID, string(enc))
	} else {
		_, err = tx.ExecContext(ctx, p.q.insertFacts, r.TenantID, r.Source, r.ID, string(enc))
	}
	if err != nil {
		return fmt.Errorf("store a row's facts: %w", err)
	}
	return nil
}

// count adds n of f to its cells, the coarse ones too when coarse.
func count(deltas map[cellKey]*cellDelta, tenant string, f fact, n int64, coarse bool) {
	for _, g := range grainsOf(f.Metric, coarse) {
		width := int64(g / time.Second)
		for _, set := range dimSets {
			k := cellKey{tenant: tenant, metric: f.Metric, set: set, grain: width, bucket: f.At - mod(f.At, width),
				dims: keep(set, f.Dims), subkey: f.Subkey, series: f.Series, bin: f.Bin}
			d := deltas[k]
			if d == nil {
				d = &cellDelta{}
				deltas[k] = d
			}
			w := f.Weight
			if w == 0 {
				w = 1
			}
			d.n += n * w
			if n > 0 {
				d.peak = max(d.peak, f.Value)
			}
		}
	}
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// write upserts the batch's cells in key order.
func (p *Projector) write(ctx context.Context, tx *sqldb.Tx, deltas map[cellKey]*cellDelta) error {
	type item struct {
		k    cellKey
		hash []byte
		d    *cellDelta
	}
	items := make([]item, 0, len(deltas))
	for k, d := range deltas {
		if d.n == 0 && d.peak == 0 {
			continue // a fact that left and came back within the batch
		}
		items = append(items, item{k, k.hash(), d})
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].k, items[j].k
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c < 0
		}
		if a.metric != b.metric {
			return a.metric < b.metric
		}
		if a.set != b.set {
			return a.set < b.set
		}
		if a.grain != b.grain {
			return a.grain < b.grain
		}
		if a.bucket != b.bucket {
			return a.bucket < b.bucket
		}
		return bytes.Compare(items[i].hash, items[j].hash) < 0
	})
	for _, it := range items {
		k := it.k
		if _, err := tx.ExecContext(ctx, p.q.upsertCell, k.tenant, int(k.metric), k.grain, k.bucket, it.hash,
			k.dims.Project, k.dims.Agent, k.dims.Release, k.dims.Kind, k.subkey, k.series, k.bin, it.d.n, it.d.peak, int(k.set),
			k.dims.ErrorCode); err != nil {
			return fmt.Errorf("count a roll-up cell: %w", err)
		}
	}
	return nil
}

// cellRow is one cell as an insight reads it.
type cellRow struct {
	BucketStart int64  `db:"BucketStart"`
	Project     string `db:"ProjectId"`
	Agent       string `db:"AgentId"`
	Release     string `db:"ReleaseId"`
	Kind        string `db:"Kind"`
	ErrorCode   string `db:"ErrorCode"`
	Subkey      string `db:"Subkey"`
	Series      string `db:"Series"`
	Bin         int64  `db:"Bin"`
	N           int64  `db:"N"`
	Peak        int64  `db:"Peak"`
}

// coarseComplete says whether the coarse cells are complete through the projector's
// position (its CoarseThrough is its Position).
func coarseComplete(ctx context.Context, tx *sqldb.Tx, q *rollupQueries) (bool, error) {
	var current int
	if err := tx.GetContext(ctx, &current, q.coarseCurrent, ProjectorName); err != nil {
		return false, fmt.Errorf("read the coarse cells' position: %w", err)
	}
	return current == 1, nil
}

// chain is the grains a binned insight's window of bucket width can be tiled with, finest
// first: the window's own and the wider ones, the coarse grain only while its cells are
// complete (the projector's CoarseThrough is its Position).
func (s *Store) chain(ctx context.Context, tx *sqldb.Tx, width int64, w Window) ([]int64, error) {
	var chain []int64
	for _, g := range grains {
		if d := int64(g / time.Second); d >= width {
			chain = append(chain, d)
		}
	}
	coarse := int64(coarseGrain / time.Second)
	if w.To.Unix()-w.From.Unix() < coarse {
		return chain, nil // no coarse bucket fits: spare the read of the position
	}
	complete, err := coarseComplete(ctx, tx, s.rq)
	if err != nil {
		return nil, err
	}
	if complete {
		chain = append(chain, coarse)
	}
	return chain, nil
}

// insight says how one insight reads: its direct statement (the reference) and its cells.
type insight struct {
	name   string
	direct string
	metric metric
	// series keeps only that series of the metric ("": all).
	series string
	// subkeyGroups: the group is the cell's Subkey (a call's target, a decision's kind).
	subkeyGroups bool
}

// readCells reads the window's cells of in and shapes them as the direct statement's rows:
// (group, bucket, series) -> N and Peak, the groups past the largest InsightMaxGroups
// folded into one NULL group (ranked by total, then key, as the statements rank them).
func (s *Store) readCells(ctx context.Context, tx *sqldb.Tx, tenantID string, in insight, w Window, f Filter) ([]row, error) {
	var cells []cellRow
	width := int64(w.Width() / time.Second)
	var series *string
	if in.series != "" {
		series = &in.series
	}
	group := w.GroupBy
	if in.subkeyGroups {
		group = ""
	}
	ranges := []span{{width, w.From.Unix(), w.To.Unix()}}
	if binned[in.metric] {
		// Totals per bin: any grain's cells that tile the window answer it.
		chain, err := s.chain(ctx, tx, width, w)
		if err != nil {
			return nil, err
		}
		ranges = spans(w.From.Unix(), w.To.Unix(), chain)
	}
	for _, r := range ranges {
		var got []cellRow
		if err := tx.SelectContext(ctx, &got, s.rq.cells, tenantID, int(in.metric), r.grain, r.lo, r.hi,
			f.ProjectID, f.AgentID, f.ReleaseID, f.Kind, series, int(setFor(group, f))); err != nil {
			return nil, err
		}
		cells = append(cells, got...)
	}
	s.cellsRead.Add(int64(len(cells)))
	type key struct {
		group  string
		bucket int64
		series string
	}
	sums := map[key]*row{}
	totals := map[string]int64{}
	var order []key
	for _, c := range cells {
		d := dims{Project: c.Project, Agent: c.Agent, Release: c.Release, Kind: c.Kind, ErrorCode: c.ErrorCode}
		k := key{group: groupValue(w.GroupBy, d), series: c.Series}
		if in.subkeyGroups {
			k.group = c.Subkey
		}
		if binned[in.metric] {
			k.bucket = c.Bin
		} else {
			k.bucket = (c.BucketStart - w.From.Unix()) / width
		}
		r := sums[k]
		if r == nil {
			r = &row{GroupKey: sql.NullString{String: k.group, Valid: true}, Bucket: k.bucket, Series: k.series}
			sums[k] = r
			order = append(order, k)
		}
		r.N += c.N
		r.Peak = max(r.Peak, c.Peak)
		totals[k.group] += c.N
	}
	groups := make([]string, 0, len(totals))
	for g := range totals {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if totals[groups[i]] != totals[groups[j]] {
			return totals[groups[i]] > totals[groups[j]]
		}
		return groups[i] < groups[j]
	})
	named := map[string]bool{}
	for i, g := range groups {
		named[g] = i < api.InsightMaxGroups
	}
	folded := map[key]*row{}
	var out []row
	for _, k := range order {
		r := sums[k]
		if named[k.group] {
			out = append(out, *r)
			continue
		}
		ok := key{bucket: k.bucket, series: k.series}
		o := folded[ok]
		if o == nil {
			o = &row{Bucket: k.bucket, Series: k.series}
			folded[ok] = o
		}
		o.N += r.N
		o.Peak = max(o.Peak, r.Peak)
	}
	others := slices.Collect(func(yield func(row) bool) {
		for _, o := range folded {
			if !yield(*o) {
				return
			}
		}
	})
	return append(out, others...), nil
}
