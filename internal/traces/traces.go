// Package traces exports the ledger's history to an OpenTelemetry collector as traces
// (DESIGN.md 5b, issue 31): a run is an `invoke_workflow {kind}` span, each attempt an
// `invoke_agent {agentId}` span under it with its checkpoints as events, each model call a
// `{operation} {model}` span and each tool call an `execute_tool {target}` span under the
// attempt, decisions and delegations ledger-named spans, all attributed by the GenAI
// semantic conventions. It reads the committed change feed off the write path (a
// feed.Exporter): a row is exported once it has ended, with trace and span ids derived from
// row ids, so a second export of the same row sends the identical span. Run input,
// checkpoint state, decision options and answers and call requests are never read.
package traces

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Name keys the exporter's position and lease in the feed.
const Name = "otlp-traces"

// DefaultBatch is how many rows of each table one step reads at most.
const DefaultBatch = 256

// maxEvents bounds the checkpoints one attempt span carries as events.
const maxEvents = 128

// Exporter is the feed exporter of spans. It holds no state between steps: its position
// lives in the feed's table.
type Exporter struct {
	send     sdktrace.SpanExporter
	batch    int
	resource *resource.Resource
	scope    instrumentation.Scope
}

// New returns the exporter that sends through send (an OTLP exporter in the service, a
// recorder in tests). batch bounds the rows of each table a step reads (0: DefaultBatch).
func New(send sdktrace.SpanExporter, batch int, version string) *Exporter {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Exporter{send: send, batch: batch,
		resource: resource.NewSchemaless(attribute.String("service.name", "ledger"), attribute.String("service.version", version)),
		scope:    instrumentation.Scope{Name: "github.com/ledger-dev/ledger/internal/traces", Version: version}}
}

// Name implements feed.Exporter.
func (e *Exporter) Name() string { return Name }

// Send implements feed.Exporter: the batch is the spans Read built.
func (e *Exporter) Send(ctx context.Context, batch any) error {
	spans, _ := batch.([]sdktrace.ReadOnlySpan)
	if len(spans) == 0 {
		return nil
	}
	return e.send.ExportSpans(ctx, spans)
}

// Shutdown stops the span exporter (flushing nothing: the exporter holds no queue).
func (e *Exporter) Shutdown(ctx context.Context) error { return e.send.Shutdown(ctx) }

type runRow struct {
	RunID               uuid.UUID        `db:"RunId"`
	TenantID            string           `db:"TenantId"`
	Version             sqldb.RowVersion `db:"Version"`
	ProjectID           string           `db:"ProjectId"`
	Kind                string           `db:"Kind"`
	AgentID             string           `db:"AgentId"`
	QueuedAt            sqldb.Time       `db:"QueuedAt"`
	EndedAt             sqldb.NullTime   `db:"EndedAt"`
	Outcome             *string          `db:"Outcome"`
	ErrorCode           *string          `db:"ErrorCode"`
	Attempt             int              `db:"Attempt"`
	ContinuedFromRunID  uuid.NullUUID    `db:"ContinuedFromRunId"`
	DelegationID        uuid.NullUUID    `db:"DelegationId"`
	DelegationAttemptID uuid.NullUUID    `db:"DelegationAttemptId"`
	DelegatedAt         sqldb.NullTime   `db:"DelegatedAt"`
	ChildAgentID        *string          `db:"ChildAgentId"`
	DelegationStatus    *string          `db:"DelegationStatus"`
}

type attemptRow struct {
	AttemptID      uuid.UUID        `db:"AttemptId"`
	RunID          uuid.UUID        `db:"RunId"`
	TenantID       string           `db:"TenantId"`
	Version        sqldb.RowVersion `db:"Version"`
	AgentID        string           `db:"AgentId"`
	ReleaseID      string           `db:"ReleaseId"`
	AdapterVersion string           `db:"AdapterVersion"`
	ModelProfileID string           `db:"ModelProfileId"`
	State          api.AttemptState `db:"State"`
	StartedAt      sqldb.Time       `db:"StartedAt"`
	EndedAt        sqldb.NullTime   `db:"EndedAt"`
	FencingToken   int64            `db:"FencingToken"`
}

type callRow struct {
	CallID                   uuid.UUID        `db:"CallId"`
	AttemptID                uuid.UUID        `db:"AttemptId"`
	RunID                    uuid.UUID        `db:"RunId"`
	TenantID                 string           `db:"TenantId"`
	Version                  sqldb.RowVersion `db:"Version"`
	Kind                     api.CallKind     `db:"Kind"`
	Target                   string           `db:"Target"`
	Status                   string           `db:"Status"`
	StartedAt                sqldb.Time       `db:"StartedAt"`
	EndedAt                  sqldb.NullTime   `db:"EndedAt"`
	Model                    *string          `db:"Model"`
	Provider                 *string          `db:"Provider"`
	Operation                *string          `db:"Operation"`
	ResponseModel            *string          `db:"ResponseModel"`
	FinishReasons            *string          `db:"FinishReasons"`
	InputTokens              *int64           `db:"InputTokens"`
	OutputTokens             *int64           `db:"OutputTokens"`
	CacheReadInputTokens     *int64           `db:"CacheReadInputTokens"`
	CacheCreationInputTokens *int64           `db:"CacheCreationInputTokens"`
	ReasoningOutputTokens    *int64           `db:"ReasoningOutputTokens"`
	CostMicros               *int64           `db:"CostMicros"`
}

type decisionRow struct {
	DecisionID  uuid.UUID        `db:"DecisionId"`
	AttemptID   uuid.UUID        `db:"AttemptId"`
	RunID       uuid.UUID        `db:"RunId"`
	TenantID    string           `db:"TenantId"`
	Version     sqldb.RowVersion `db:"Version"`
	Kind        api.DecisionKind `db:"Kind"`
	Status      string           `db:"Status"`
	RequestedAt sqldb.Time       `db:"RequestedAt"`
	ClosedAt    sqldb.NullTime   `db:"ClosedAt"`
}

type checkpointRow struct {
	Sequence  int        `db:"Sequence"`
	Phase     api.Phase  `db:"Phase"`
	CreatedAt sqldb.Time `db:"CreatedAt"`
}

// Read implements feed.Exporter: the ended rows of each table past after, at most the
// batch of each, cut at the first version a full table's read may continue past.
func (e *Exporter) Read(ctx context.Context, tx *sqldb.Tx, after, ceiling sqldb.RowVersion) (any, sqldb.RowVersion, error) {
	q := queriesFor(tx.Dialect)
	var (
		runs      []runRow
		attempts  []attemptRow
		calls     []callRow
		decisions []decisionRow
	)
	read := func(upTo sqldb.RowVersion, limit int) (sqldb.RowVersion, error) {
		through := upTo - 1
		runs, attempts, calls, decisions = nil, nil, nil, nil
		args := []any{tx.Dialect.Version(after), tx.Dialect.Version(upTo), limit}
		for _, src := range []struct {
			query string
			dst   any
			last  func() (sqldb.RowVersion, int)
		}{
			{q.runs, &runs, func() (sqldb.RowVersion, int) {
				return lastVersion(runs, func(r runRow) sqldb.RowVersion { return r.Version })
			}},
			{q.attempts, &attempts, func() (sqldb.RowVersion, int) {
				return lastVersion(attempts, func(r attemptRow) sqldb.RowVersion { return r.Version })
			}},
			{q.calls, &calls, func() (sqldb.RowVersion, int) {
				return lastVersion(calls, func(r callRow) sqldb.RowVersion { return r.Version })
			}},
			{q.decisions, &decisions, func() (sqldb.RowVersion, int) {
				return lastVersion(decisions, func(r decisionRow) sqldb.RowVersion { return r.Version })
			}},
		} {
			if err := tx.SelectContext(ctx, src.dst, src.query, args...); err != nil {
				return 0, fmt.Errorf("read ended rows: %w", err)
			}
			if v, n := src.last(); n == limit {
				// The batch's last version may continue past it: send only what is before.
				through = min(through, v-1)
			}
		}
		return through, nil
	}
	through, err := feed.ReadBatch(after, ceiling, e.batch, read)
	if err != nil {
		return nil, 0, err
	}
	b := builder{e: e, tx: tx, q: q, ctx: ctx, roots: map[uuid.UUID]root{}}
	for _, r := range runs {
		if r.Version <= through {
			if err := b.run(r); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, a := range attempts {
		if a.Version <= through {
			if err := b.attempt(a); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, c := range calls {
		if c.Version <= through {
			if err := b.call(c); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, d := range decisions {
		if d.Version <= through {
			if err := b.decision(d); err != nil {
				return nil, 0, err
			}
		}
	}
	return b.stubs.Snapshots(), through, nil
}

func lastVersion[T any](rows []T, version func(T) sqldb.RowVersion) (sqldb.RowVersion, int) {
	if len(rows) == 0 {
		return 0, 0
	}
	return version(rows[len(rows)-1]), len(rows)
}

// builder turns one batch's rows into spans.
type builder struct {
	e     *Exporter
	tx    *sqldb.Tx
	q     *queries
	ctx   context.Context
	roots map[uuid.UUID]root
	stubs tracetest.SpanStubs
}

// root is the top of a run's chain and the W3C traceparent its enqueue carried, if any.
type root struct {
	RunID       uuid.UUID `db:"RunId"`
	TraceParent *string   `db:"TraceParent"`
}

// callerParent is the caller's span a root run's span hangs under (its traceparent's trace
// and parent ids), or an invalid context when the enqueue carried none.
func (r root) callerParent() trace.SpanContext {
	if r.TraceParent == nil || len(*r.TraceParent) != 55 {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex((*r.TraceParent)[3:35])
	sid, err2 := trace.SpanIDFromHex((*r.TraceParent)[36:52])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// trace is the chain's trace: the caller's when the root's enqueue carried a traceparent,
// else one derived from the root run's id.
func (r root) trace() trace.TraceID {
	if p := r.callerParent(); p.IsValid() {
		return p.TraceID()
	}
	return traceID(r.RunID)
}

// Span and trace ids are derived from row ids: the same row always makes the same span.
func spanID(kind string, id uuid.UUID) trace.SpanID {
	sum := sha256.Sum256(append([]byte(kind+":"), id[:]...))
	var s trace.SpanID
	copy(s[:], sum[:8])
	return s
}

func traceID(root uuid.UUID) trace.TraceID {
	sum := sha256.Sum256(append([]byte("trace:"), root[:]...))
	var t trace.TraceID
	copy(t[:], sum[:16])
	return t
}

// rootOf is the root of a run's chain (continuations and delegated children share their
// root's trace).
func (b *builder) rootOf(runID uuid.UUID) (root, error) {
	r, ok := b.roots[runID]
	if !ok {
		if err := b.tx.GetContext(b.ctx, &r, b.q.root, runID); err != nil {
			return root{}, fmt.Errorf("find the root of run %s: %w", runID, err)
		}
		b.roots[runID] = r
	}
	return r, nil
}

// traceOf is the trace of a run's rows.
func (b *builder) traceOf(runID uuid.UUID) (trace.TraceID, error) {
	r, err := b.rootOf(runID)
	return r.trace(), err
}

func context3(tid trace.TraceID, sid trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

func (b *builder) add(name string, kind trace.SpanKind, self, parent trace.SpanContext, start, end time.Time,
	attrs []attribute.KeyValue, status sdktrace.Status, events []sdktrace.Event) {
	if end.Before(start) {
		end = start
	}
	b.stubs = append(b.stubs, tracetest.SpanStub{Name: name, SpanKind: kind, SpanContext: self, Parent: parent,
		StartTime: start, EndTime: end, Attributes: attrs, Events: events, Status: status,
		Resource: b.e.resource, InstrumentationScope: b.e.scope})
}

func ledgerAttrs(tenant string, runID uuid.UUID) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("ledger.tenant.id", tenant), attribute.String("ledger.run.id", runID.String())}
}

func errorStatus(code string) sdktrace.Status {
	return sdktrace.Status{Code: codes.Error, Description: code}
}

func (b *builder) run(r runRow) error {
	top, err := b.rootOf(r.RunID)
	if err != nil {
		return err
	}
	tid := top.trace()
	var parent trace.SpanContext
	switch {
	case r.DelegationID.Valid:
		parent = context3(tid, spanID("delegation", r.DelegationID.UUID))
	case r.ContinuedFromRunID.Valid:
		parent = context3(tid, spanID("run", r.ContinuedFromRunID.UUID))
	case top.RunID == r.RunID:
		parent = top.callerParent() // the caller's span, when the enqueue carried a traceparent
	}
	outcome := deref(r.Outcome)
	attrs := append(ledgerAttrs(r.TenantID, r.RunID), attribute.String("gen_ai.operation.name", "invoke_workflow"),
		attribute.String("ledger.project.id", r.ProjectID), attribute.String("ledger.run.kind", r.Kind),
		attribute.String("gen_ai.agent.id", r.AgentID), attribute.String("ledger.run.outcome", outcome),
		attribute.Int("ledger.run.attempts", r.Attempt))
	status := sdktrace.Status{}
	if outcome != string(api.OutcomeSucceeded) {
		code := deref(r.ErrorCode)
		if code == "" {
			code = outcome
		}
		attrs = append(attrs, attribute.String("error.type", code))
		status = errorStatus(code)
	}
	b.add("invoke_workflow "+r.Kind, trace.SpanKindInternal, context3(tid, spanID("run", r.RunID)), parent,
		r.QueuedAt.Time, r.EndedAt.Time, attrs, status, nil)
	if r.DelegationID.Valid && r.DelegationAttemptID.Valid {
		// The delegation that made this child run ends when the child does.
		d := append(ledgerAttrs(r.TenantID, r.RunID), attribute.String("ledger.delegation.id", r.DelegationID.UUID.String()),
			attribute.String("ledger.attempt.id", r.DelegationAttemptID.UUID.String()),
			attribute.String("ledger.delegation.status", deref(r.DelegationStatus)),
			attribute.String("ledger.delegation.child_agent.id", deref(r.ChildAgentID)))
		start := r.QueuedAt.Time
		if r.DelegatedAt.Valid {
			start = r.DelegatedAt.Time
		}
		b.add("ledger.delegation "+deref(r.ChildAgentID), trace.SpanKindInternal, context3(tid, spanID("delegation", r.DelegationID.UUID)),
			context3(tid, spanID("attempt", r.DelegationAttemptID.UUID)), start, r.EndedAt.Time, d, status, nil)
	}
	return nil
}

func (b *builder) attempt(a attemptRow) error {
	tid, err := b.traceOf(a.RunID)
	if err != nil {
		return err
	}
	var cps []checkpointRow
	if err := b.tx.SelectContext(b.ctx, &cps, b.q.checkpoints, a.AttemptID, maxEvents); err != nil {
		return fmt.Errorf("read the checkpoints of attempt %s: %w", a.AttemptID, err)
	}
	events := make([]sdktrace.Event, 0, len(cps))
	for _, c := range cps {
		events = append(events, sdktrace.Event{Name: "ledger.checkpoint", Time: c.CreatedAt.Time, Attributes: []attribute.KeyValue{
			attribute.Int("ledger.checkpoint.sequence", c.Sequence), attribute.String("ledger.checkpoint.phase", c.Phase.String())}})
	}
	attrs := append(ledgerAttrs(a.TenantID, a.RunID), attribute.String("ledger.attempt.id", a.AttemptID.String()),
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.id", a.AgentID),
		attribute.String("gen_ai.agent.version", a.ReleaseID+"@"+a.AdapterVersion),
		attribute.String("ledger.model_profile.id", a.ModelProfileID), attribute.String("ledger.attempt.state", a.State.String()),
		attribute.Int64("ledger.attempt.fencing_token", a.FencingToken))
	status := sdktrace.Status{}
	switch a.State {
	case api.AttemptLost:
		attrs = append(attrs, attribute.String("error.type", "lease_lost"))
		status = errorStatus("lease_lost")
	case api.AttemptFailed, api.AttemptCancelled:
		attrs = append(attrs, attribute.String("error.type", a.State.String()))
		status = errorStatus(a.State.String())
	}
	b.add("invoke_agent "+a.AgentID, trace.SpanKindInternal, context3(tid, spanID("attempt", a.AttemptID)),
		context3(tid, spanID("run", a.RunID)), a.StartedAt.Time, a.EndedAt.Time, attrs, status, events)
	return nil
}

func (b *builder) call(c callRow) error {
	tid, err := b.traceOf(c.RunID)
	if err != nil {
		return err
	}
	attrs := append(ledgerAttrs(c.TenantID, c.RunID), attribute.String("ledger.attempt.id", c.AttemptID.String()),
		attribute.String("ledger.call.id", c.CallID.String()), attribute.String("ledger.call.kind", c.Kind.String()),
		attribute.String("ledger.call.status", c.Status))
	var name string
	kind := trace.SpanKindClient
	switch {
	case c.Kind == api.CallModel:
		op := deref(c.Operation)
		if op == "" {
			op = "chat"
		}
		model := deref(c.Model)
		name = op
		if model != "" {
			name += " " + model
			attrs = append(attrs, attribute.String("gen_ai.request.model", model))
		}
		attrs = append(attrs, attribute.String("gen_ai.operation.name", op))
		if p := deref(c.Provider); p != "" {
			attrs = append(attrs, attribute.String("gen_ai.provider.name", p))
		}
		if m := deref(c.ResponseModel); m != "" {
			attrs = append(attrs, attribute.String("gen_ai.response.model", m))
		}
		for _, n := range []struct {
			key string
			v   *int64
		}{{"gen_ai.usage.input_tokens", c.InputTokens}, {"gen_ai.usage.output_tokens", c.OutputTokens},
			{"gen_ai.usage.cache_read.input_tokens", c.CacheReadInputTokens},
			{"gen_ai.usage.cache_creation.input_tokens", c.CacheCreationInputTokens},
			{"ledger.usage.reasoning_output_tokens", c.ReasoningOutputTokens}, {"ledger.cost_micros", c.CostMicros}} {
			if n.v != nil {
				attrs = append(attrs, attribute.Int64(n.key, *n.v))
			}
		}
		if c.FinishReasons != nil {
			var rs []string
			if json.Unmarshal([]byte(*c.FinishReasons), &rs) == nil && len(rs) > 0 {
				attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", rs))
			}
		}
	case c.Kind == api.CallTool:
		name = "execute_tool " + c.Target
		kind = trace.SpanKindInternal
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", c.Target), attribute.String("gen_ai.tool.call.id", c.CallID.String()))
	default:
		name = c.Kind.String() + " " + c.Target
		attrs = append(attrs, attribute.String("ledger.call.target", c.Target))
	}
	status := sdktrace.Status{}
	if c.Status != string(api.CallSucceeded) {
		attrs = append(attrs, attribute.String("error.type", c.Status))
		status = errorStatus(c.Status)
	}
	b.add(name, kind, context3(tid, spanID("call", c.CallID)), context3(tid, spanID("attempt", c.AttemptID)),
		c.StartedAt.Time, c.EndedAt.Time, attrs, status, nil)
	return nil
}

func (b *builder) decision(d decisionRow) error {
	tid, err := b.traceOf(d.RunID)
	if err != nil {
		return err
	}
	attrs := append(ledgerAttrs(d.TenantID, d.RunID), attribute.String("ledger.attempt.id", d.AttemptID.String()),
		attribute.String("ledger.decision.id", d.DecisionID.String()), attribute.String("ledger.decision.kind", d.Kind.String()),
		attribute.String("ledger.decision.status", d.Status))
	end := d.RequestedAt.Time
	if d.ClosedAt.Valid {
		end = d.ClosedAt.Time
	}
	b.add("ledger.decision "+d.Kind.String(), trace.SpanKindInternal, context3(tid, spanID("decision", d.DecisionID)),
		context3(tid, spanID("attempt", d.AttemptID)), d.RequestedAt.Time, end, attrs, sdktrace.Status{}, nil)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
