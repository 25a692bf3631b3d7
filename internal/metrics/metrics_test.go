package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
)

// scrape reads /metrics into "name{labels}" -> value, labels in the exposition's order
// (sorted by name).
func scrape(t *testing.T, s *apitest.Stack) map[string]float64 {
	t.Helper()
	r := s.Do(t, "GET", "/metrics", "", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d", r.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad metric line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func expect(t *testing.T, m map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("%s: missing", k)
			continue
		}
		if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}

// workload drives one tenant through every event the families count and returns the
// fence code the lost attempt's late write got.
func workload(t *testing.T, s *apitest.Stack, tn *apitest.Tenant) (lateCode string) {
	t.Helper()
	if err := s.Keys.SetMaxLeased(context.Background(), tn.ID, 2); err != nil {
		t.Fatal(err)
	}
	tn.Enqueue("s-interactive", "interactive")
	tn.Enqueue("s-batch-1", "batch")
	tn.Enqueue("s-background", "background")
	tn.Enqueue("s-batch-2", "batch")

	if _, ok, held := tn.Claim(60, map[string]any{"kinds": []string{"no-such-kind"}}); ok || held {
		t.Fatalf("a claim for a kind with no runs should find nothing: ok=%v held=%v", ok, held)
	}
	short, ok, _ := tn.Claim(10, nil) // the interactive run, lost to the reaper below
	if !ok || short.Run.Band != api.BandInteractive {
		t.Fatalf("first claim: %+v ok=%v", short, ok)
	}
	long, ok, _ := tn.Claim(3600, nil) // the older batch run, kept
	if !ok || long.Run.Band != api.BandBatch {
		t.Fatalf("second claim: %+v ok=%v", long, ok)
	}
	if _, ok, held := tn.Claim(60, nil); ok || !held {
		t.Fatalf("third claim should be held by the budget of 2: ok=%v held=%v", ok, held)
	}
	// A stale write: a token from before the epoch.
	r := tn.Must(http.StatusConflict, "POST", long.Path("/heartbeat"), tn.Runtime, map[string]any{"fencingToken": long.Lease.FencingToken + 7})
	if code := r.Problem(t); code != "stale_lease" {
		t.Fatalf("stale heartbeat answered %s", code)
	}
	tn.Must(http.StatusCreated, "POST", long.Path("/decisions"), tn.Runtime, map[string]any{
		"fencingToken": long.Lease.FencingToken, "kind": "approval"})

	s.Clock.Advance(20 * time.Second)
	res, err := s.App.Runs.Reap(context.Background())
	if err != nil || res.TakenBack != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	late := tn.Must(http.StatusConflict, "POST", short.Path("/heartbeat"), tn.Runtime, map[string]any{"fencingToken": short.Lease.FencingToken})
	return late.Problem(t)
}

// TestMetricsAfterWorkload reads every domain family after a scripted workload: enqueues,
// claims that lease, find nothing and are held by the budget, a stale write, a lease lost
// to the reaper and the late write of its holder, and a pending decision.
func TestMetricsAfterWorkload(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	late := workload(t, s, tn)
	m := scrape(t, s)
	expect(t, m, map[string]float64{
		`ledger_claims_total{outcome="leased"}`:                                         2,
		`ledger_claims_total{outcome="budget_hold"}`:                                    1,
		`ledger_claims_total{outcome="empty"}`:                                          1,
		`ledger_claims_total{outcome="error"}`:                                          0,
		`ledger_claim_duration_seconds_count{outcome="leased"}`:                         2,
		`ledger_claim_duration_seconds_count{outcome="budget_hold"}`:                    1,
		`ledger_fence_refusals_total{code="stale_lease"}`:                               1,
		`ledger_fence_refusals_total{code="` + late + `"}`:                              1,
		`ledger_leases_lost_total`:                                                      1,
		`ledger_reaper_takebacks_total{result="taken_back"}`:                            1,
		`ledger_reaper_takebacks_total{result="failed"}`:                                0,
		`ledger_runs{band="interactive",state="queued"}`:                                1, // taken back
		`ledger_runs{band="batch",state="queued"}`:                                      1,
		`ledger_runs{band="background",state="queued"}`:                                 1,
		`ledger_runs{band="batch",state="leased"}`:                                      1,
		`ledger_runs{band="interactive",state="leased"}`:                                0,
		`ledger_decisions_pending`:                                                      1,
		`ledger_oldest_due_queued_run_age_seconds`:                                      20, // due at enqueue, 20 s ago
		`ledger_http_requests_total{method="POST",route="/v1/runs/claim",status="204"}`: 2,
		`ledger_metrics_read_errors_total`:                                              0,
	})
	if late != "attempt_ended" && late != "lease_expired" {
		t.Errorf("the lost holder's write answered %s, want a fence refusal", late)
	}
	if m[`ledger_sqlite_group_commit_size_count`] < 1 || m[`ledger_sqlite_group_commit_size_sum`] < m[`ledger_sqlite_group_commit_size_count`] {
		t.Errorf("group commit size: count %v sum %v", m[`ledger_sqlite_group_commit_size_count`], m[`ledger_sqlite_group_commit_size_sum`])
	}
	// Every write went through Write: at least the enqueues, claims, decision and take-back.
	if m[`ledger_db_write_duration_seconds_count`] < 8 {
		t.Errorf("write latency count %v, want at least 8", m[`ledger_db_write_duration_seconds_count`])
	}
}

// TestMetricsTenantLabels: with tenant labels on, each tenant's series are its own.
func TestMetricsTenantLabels(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{App: app.Config{MetricsTenantLabels: true}, Serve: true})
	a, b := s.NewTenant(t), s.NewTenant(t)
	workload(t, s, a)
	b.Enqueue("b-1", "background")
	m := scrape(t, s)
	expect(t, m, map[string]float64{
		`ledger_claims_total{outcome="leased",tenant="` + a.ID + `"}`:           2,
		`ledger_fence_refusals_total{code="stale_lease",tenant="` + a.ID + `"}`: 1,
		`ledger_leases_lost_total{tenant="` + a.ID + `"}`:                       1,
		`ledger_runs{band="background",state="queued",tenant="` + a.ID + `"}`:   1,
		`ledger_runs{band="background",state="queued",tenant="` + b.ID + `"}`:   1,
		`ledger_runs{band="batch",state="leased",tenant="` + b.ID + `"}`:        0,
		`ledger_decisions_pending{tenant="` + a.ID + `"}`:                       1,
		`ledger_decisions_pending{tenant="` + b.ID + `"}`:                       0,
		`ledger_oldest_due_queued_run_age_seconds{tenant="` + a.ID + `"}`:       20,
		`ledger_oldest_due_queued_run_age_seconds{tenant="` + b.ID + `"}`:       0, // enqueued after the clock moved
	})
	for k := range m {
		if strings.HasPrefix(k, "ledger_claims_total{") && strings.Contains(k, b.ID) {
			t.Errorf("tenant %s made no claim but has %s", b.ID, k)
		}
	}
}

// TestMetricsScrapeCache: scrapes within the cache period read the database once, so a
// change made between them shows only after the period.
func TestMetricsScrapeCache(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{App: app.Config{MetricsCacheTTL: time.Hour}, Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("c-1", "batch")
	if got := scrape(t, s)[`ledger_runs{band="batch",state="queued"}`]; got != 1 {
		t.Fatalf("queued batch = %v, want 1", got)
	}
	tn.Enqueue("c-2", "batch")
	if got := scrape(t, s)[`ledger_runs{band="batch",state="queued"}`]; got != 1 {
		t.Fatalf("a second scrape within the cache period read the database again: %v", got)
	}
}

// TestMetricsCountWaitingRunsApart: a run parked on its decision is ledger_runs
// {state="waiting"}, not queued, and holds no lease.
func TestMetricsCountWaitingRunsApart(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	tn.Enqueue("s-parked", "batch")
	cl, ok, _ := tn.Claim(60, nil)
	if !ok {
		t.Fatal("claim found nothing")
	}
	d := tn.Must(http.StatusCreated, "POST", cl.Path("/decisions"), tn.Runtime, map[string]any{
		"fencingToken": cl.Lease.FencingToken, "kind": "approval"})
	var decision struct {
		DecisionID string `json:"decisionId"`
	}
	apitest.Decode(t, d, &decision)
	tn.Must(http.StatusOK, "POST", cl.Path("/park"), tn.Runtime, map[string]any{
		"fencingToken": cl.Lease.FencingToken, "decisionIds": []string{decision.DecisionID}})
	expect(t, scrape(t, s), map[string]float64{
		`ledger_runs{band="batch",state="waiting"}`: 1,
		`ledger_runs{band="batch",state="queued"}`:  0,
		`ledger_runs{band="batch",state="leased"}`:  0,
		`ledger_decisions_pending`:                  1,
	})
}
