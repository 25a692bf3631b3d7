package traces_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/feed"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/traces"
)

// epoch is in this package's own clock range (dbtest.PackageEpoch).
var epoch = dbtest.PackageEpoch(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))

// collector is an OTLP/HTTP receiver on a local port: it decodes every request with the
// OpenTelemetry proto module and keeps the spans by span id (a receiver keeps the last copy).
type collector struct {
	srv      *httptest.Server
	mu       sync.Mutex
	spans    map[string]*tracepb.Span
	requests int
	down     atomic.Bool // answer 503 and keep nothing
}

func newCollector(t *testing.T) *collector {
	c := &collector{spans: map[string]*tracepb.Span{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "Bearer collector-token" {
			http.Error(w, "no auth header", http.StatusUnauthorized)
			return
		}
		if c.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.requests++
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans[hex.EncodeToString(s.SpanId)] = s
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) byName() map[string][]*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]*tracepb.Span{}
	for _, s := range c.spans {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

func (c *collector) snapshot() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for id, s := range c.spans {
		b, _ := proto.Marshal(s)
		out[id] = string(b)
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func str(s *tracepb.Span, key string) string {
	if v := attr(s, key); v != nil {
		return v.GetStringValue()
	}
	return ""
}

func exporter(t *testing.T, s *apitest.Stack, c *collector, holder string) *feed.ExportRunner {
	t.Helper()
	send, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.srv.URL+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer collector-token"}),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	e := traces.New(send, 0, "test")
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return feed.NewExportRunner(s.DB, e, feed.Options{Holder: holder, Log: apitest.Quiet()})
}

// script runs a run's life with a retry after a lost lease, a checkpoint, a model call with
// usage, a tool call, an answered decision and a delegated child, and a second tenant's run;
// it returns the first tenant's run id.
func script(t *testing.T, s *apitest.Stack) (runID, otherRunID string) {
	t.Helper()
	_, admin, rt := s.TenantKeys(t)
	l := s.Lease(t, rt)
	runID = l.RunID
	at := func(l apitest.Lease, rest string) string { return "/v1/attempts/" + l.AttemptID + rest }
	apitest.WantStatus(t, s.Do(t, http.MethodPost, at(l, "/checkpoints"), rt, fmt.Sprintf(
		`{"fencingToken":%d,"sequence":0,"phase":"planning","adapterStateRef":"s3://state/0","adapterVersion":"1.0","hash":"h0"}`, l.Token), nil), http.StatusCreated)
	r := s.Do(t, http.MethodPost, at(l, "/calls"), rt, fmt.Sprintf(`{"fencingToken":%d,"sequence":0,"kind":"model",`+
		`"target":"model://claude","requestHash":"r0","model":"claude-sonnet-4","provider":"anthropic","operation":"chat"}`, l.Token), nil)
	apitest.WantStatus(t, r, http.StatusCreated)
	apitest.WantStatus(t, s.Do(t, http.MethodPatch, r.Header.Get("Location"), rt, fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded",`+
		`"usage":{"inputTokens":1200,"outputTokens":340},"responseModel":"claude-sonnet-4-20260101","finishReasons":["end_turn"],"costMicros":5100}`,
		l.Token), nil), http.StatusOK)
	r = s.Do(t, http.MethodPost, at(l, "/calls"), rt, fmt.Sprintf(
		`{"fencingToken":%d,"sequence":1,"kind":"tool","target":"github.get_diff","requestHash":"r1"}`, l.Token), nil)
	apitest.WantStatus(t, r, http.StatusCreated)
	apitest.WantStatus(t, s.Do(t, http.MethodPatch, r.Header.Get("Location"), rt,
		fmt.Sprintf(`{"fencingToken":%d,"status":"failed"}`, l.Token), nil), http.StatusOK)

	// The holder vanishes: the reaper takes the run back, the attempt is lost.
	s.Clock.Advance(61 * time.Second)
	if res, err := s.Svc.Reap(context.Background()); err != nil || res.TakenBack != 1 {
		t.Fatalf("reap: %+v %v", res, err)
	}
	s.Clock.Advance(15 * time.Minute) // past the backoff
	l2 := s.ClaimLease(t, rt)
	if l2.RunID != runID {
		t.Fatalf("claimed %s, want the run again", l2.RunID)
	}
	r = s.Do(t, http.MethodPost, at(l2, "/decisions"), rt, fmt.Sprintf(`{"fencingToken":%d,"kind":"approval","recommendation":"ship it"}`, l2.Token), nil)
	apitest.WantStatus(t, r, http.StatusCreated)
	dec := r.Header.Get("Location")
	cur := s.Do(t, http.MethodGet, dec, admin, "", nil)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, dec+"/answer", admin, `{"status":"approved","answer":{"secret":"never exported"}}`,
		map[string]string{"If-Match": cur.Header.Get("ETag")}), http.StatusOK)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, at(l2, "/delegations"), rt, fmt.Sprintf(`{"fencingToken":%d,"purpose":"summarise",`+
		`"child":{"subject":"child-of-%s","kind":"summary","projectId":"p1","agentId":"summariser","stepId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e51",`+
		`"snapshotId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e52"}}`, l2.Token, runID), nil), http.StatusCreated)
	child := s.ClaimLease(t, rt)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, at(child, "/complete"), rt, fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, child.Token), nil), http.StatusOK)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, at(l2, "/complete"), rt, fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, l2.Token), nil), http.StatusOK)

	_, _, rtB := s.TenantKeys(t)
	lb := s.Lease(t, rtB)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, at(lb, "/complete"), rtB, fmt.Sprintf(`{"fencingToken":%d,"state":"failed"}`, lb.Token), nil), http.StatusOK)
	return runID, lb.RunID
}

// TestSpansOfAScriptedRun: the collector gets exactly the expected spans, names, parents
// and attributes for a run with a lost attempt and a retry, a decision and a child; the
// other tenant's run is a trace of its own; nothing secret is exported.
func TestSpansOfAScriptedRun(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: epoch})
	runID, otherRunID := script(t, s)
	c := newCollector(t)
	if err := exporter(t, s, c, "replica-1").CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := c.byName()
	want := map[string]int{"invoke_workflow review": 2, "invoke_workflow summary": 1, "invoke_agent agent-1": 3,
		"invoke_agent summariser": 1, "chat claude-sonnet-4": 1, "execute_tool github.get_diff": 1,
		"ledger.decision approval": 1, "ledger.delegation summariser": 1}
	total := 0
	for name, n := range want {
		total += n
		if len(spans[name]) != n {
			t.Errorf("%d spans %q, want %d (all: %v)", len(spans[name]), name, n, keys(spans))
		}
	}
	if len(c.spans) != total {
		t.Fatalf("%d spans, want %d: %v", len(c.spans), total, keys(spans))
	}
	var run, otherRun *tracepb.Span
	for _, r := range spans["invoke_workflow review"] {
		switch str(r, "ledger.run.id") {
		case runID:
			run = r
		case otherRunID:
			otherRun = r
		}
	}
	if run == nil || otherRun == nil || len(run.ParentSpanId) != 0 || string(run.TraceId) == string(otherRun.TraceId) ||
		str(run, "ledger.tenant.id") == str(otherRun, "ledger.tenant.id") || str(otherRun, "error.type") != "failed" {
		t.Fatalf("run spans: %v / %v", run, otherRun)
	}
	lost, retried := 0, 0
	for _, a := range spans["invoke_agent agent-1"] {
		if str(a, "ledger.run.id") != runID {
			continue
		}
		if string(a.TraceId) != string(run.TraceId) || string(a.ParentSpanId) != string(run.SpanId) ||
			str(a, "gen_ai.agent.version") == "" || str(a, "gen_ai.operation.name") != "invoke_agent" {
			t.Fatalf("attempt span %v under run %v", a, run)
		}
		switch str(a, "ledger.attempt.state") {
		case "lost":
			lost++
			if str(a, "error.type") != "lease_lost" || len(a.Events) != 1 || a.Events[0].Name != "ledger.checkpoint" {
				t.Fatalf("lost attempt span %v", a)
			}
		case "succeeded":
			retried++
		}
	}
	if lost != 1 || retried != 1 {
		t.Fatalf("attempt spans: %d lost, %d succeeded", lost, retried)
	}
	model := spans["chat claude-sonnet-4"][0]
	if str(model, "gen_ai.request.model") != "claude-sonnet-4" || str(model, "gen_ai.provider.name") != "anthropic" ||
		str(model, "gen_ai.response.model") != "claude-sonnet-4-20260101" || attr(model, "gen_ai.usage.input_tokens").GetIntValue() != 1200 ||
		attr(model, "gen_ai.usage.output_tokens").GetIntValue() != 340 || model.Kind != tracepb.Span_SPAN_KIND_CLIENT ||
		attr(model, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()[0].GetStringValue() != "end_turn" {
		t.Fatalf("model call span %v", model)
	}
	tool := spans["execute_tool github.get_diff"][0]
	if str(tool, "gen_ai.tool.name") != "github.get_diff" || str(tool, "gen_ai.tool.call.id") == "" || str(tool, "error.type") != "failed" {
		t.Fatalf("tool call span %v", tool)
	}
	deleg, childRun := spans["ledger.delegation summariser"][0], spans["invoke_workflow summary"][0]
	if string(childRun.ParentSpanId) != string(deleg.SpanId) || string(childRun.TraceId) != string(run.TraceId) {
		t.Fatalf("child run %v not under delegation %v in the parent's trace", childRun, deleg)
	}
	for _, sp := range c.spans {
		for _, kv := range sp.Attributes {
			if v := kv.Value.GetStringValue(); v == "never exported" || v == "ship it" || v == "s3://state/0" {
				t.Fatalf("span %q exports %s = %q", sp.Name, kv.Key, v)
			}
		}
	}
}

// TestExportSurvivesACrashAndACollectorOutage: spans sent by a replica that died before it
// stored its position are sent again, identical; a collector that is down loses nothing,
// and the position waits for it.
func TestExportSurvivesACrashAndACollectorOutage(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: epoch})
	script(t, s)
	c := newCollector(t)

	c.down.Store(true)
	r1 := exporter(t, s, c, "replica-1")
	if _, err := r1.Step(context.Background()); err == nil {
		t.Fatal("a step succeeded while the collector was down")
	}
	if st, ok, err := feed.StatusOf(context.Background(), s.DB, traces.Name); err != nil || !ok || st.Position != 0 {
		t.Fatalf("after a failed send the position is %+v (%v), want 0", st, err)
	}
	c.down.Store(false)
	if err := r1.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := c.snapshot()

	// A replica that sent and died before storing its position: another replica, once the
	// lease has passed, sends the same range again: the same spans, byte for byte.
	if err := resetPosition(s); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(time.Minute)
	c.mu.Lock()
	c.spans = map[string]*tracepb.Span{}
	c.mu.Unlock()
	if err := exporter(t, s, c, "replica-2").CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := c.snapshot()
	if len(again) != len(first) || len(first) == 0 {
		t.Fatalf("re-export sent %d spans, first export %d", len(again), len(first))
	}
	for id, b := range first {
		if again[id] != b {
			t.Fatalf("span %s differs on re-export", id)
		}
	}
}

func resetPosition(s *apitest.Stack) error {
	return s.DB.Write(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(context.Background(), tx.Rebind(`UPDATE FeedProjectors SET Position = 0 WHERE Name = ?`), traces.Name)
		return err
	})
}

func keys(m map[string][]*tracepb.Span) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s×%d", k, len(v)))
	}
	return out
}

// TestRunJoinsTheCallersTrace: a run enqueued with a traceparent is exported in the caller's
// trace, its span under the caller's span, and its attempts in the same trace.
func TestRunJoinsTheCallersTrace(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: epoch})
	_, _, rt := s.TenantKeys(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/runs", rt, `{"subject":"traced","kind":"review","projectId":"p1",`+
		`"agentId":"agent-1","stepId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e51","snapshotId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e52"}`,
		map[string]string{"traceparent": tp}), http.StatusCreated)
	l := s.ClaimLease(t, rt)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/complete", rt,
		fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, l.Token), nil), http.StatusOK)
	c := newCollector(t)
	if err := exporter(t, s, c, "replica-1").CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := c.byName()
	run, att := spans["invoke_workflow review"], spans["invoke_agent agent-1"]
	if len(run) != 1 || len(att) != 1 {
		t.Fatalf("spans %v", keys(spans))
	}
	if hex.EncodeToString(run[0].TraceId) != tp[3:35] || hex.EncodeToString(run[0].ParentSpanId) != tp[36:52] ||
		string(att[0].TraceId) != string(run[0].TraceId) || string(att[0].ParentSpanId) != string(run[0].SpanId) {
		t.Fatalf("run %x parent %x, attempt %x under %x; want trace %s under %s", run[0].TraceId, run[0].ParentSpanId,
			att[0].TraceId, att[0].ParentSpanId, tp[3:35], tp[36:52])
	}
}
