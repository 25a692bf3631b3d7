package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/releases"
)

func sampleReport() *Report {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * 10 * time.Microsecond) // 10 µs .. 10 ms
	}
	appendRow := Result{Workload: Append, Sync: "normal", Clients: 32, RSSMiB: 61.4}
	appendRow.fill(h, map[string]int64{"timeout": 1, "stale_lease": 2}, 2*time.Second)
	appendRow.compare(1000, 2000)
	cycle := Result{Workload: Cycle, Sync: "full", Clients: 16, RunsPerSec: 812.5}
	cycle.fill(h, map[string]int64{}, 4*time.Second)
	depth := Result{Workload: Depth, Queued: 1_000_000, Sync: "normal", Clients: 1, SeedSeconds: 93.24,
		Note: "claim p50 1.10x that at 1k queued"}
	depth.fill(h, nil, time.Second)
	return &Report{Mode: "local", CPUs: 2, Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), DurationSec: 2,
		Results: []Result{
			appendRow, cycle, depth,
			unavailable(History, "normal", 32, []string{"GET /v1/attempts"}),
			{Workload: History, Part: "list", Sync: "normal", Clients: 16, Status: StatusOK, Ops: 10, OpsPerSec: 5, WorkloadClients: 32},
		}}
}

func TestFillAndCompare(t *testing.T) {
	t.Parallel()
	r := sampleReport().Results[0]
	if r.Ops != 1000 || r.OpsPerSec != 500 || r.Seconds != 2 {
		t.Fatalf("ops %d ops/s %v seconds %v, want 1000, 500, 2", r.Ops, r.OpsPerSec, r.Seconds)
	}
	// Nearest rank: p50 is the 500th sample (5 ms), p99 the 990th (9.9 ms), within 1/64.
	for _, c := range []struct {
		got, want float64
	}{{r.P50Ms, 5}, {r.P95Ms, 9.5}, {r.P99Ms, 9.9}, {r.MaxMs, 10}} {
		if c.got < c.want || c.got > c.want*(1+1.0/half)+0.001 {
			t.Errorf("percentile %v ms, want %v ms (within 1/%d above)", c.got, c.want, half)
		}
	}
	if r.Status != StatusOK {
		t.Errorf("status %q, want ok", r.Status)
	}
	if r.XDriver != 0.5 || r.XCeiling != 0.25 || r.DriverOpsPerSec != 1000 || r.CeilingOpsPerSec != 2000 {
		t.Errorf("ratios %v %v of %v %v, want 0.5 and 0.25 of 1000 and 2000", r.XDriver, r.XCeiling, r.DriverOpsPerSec, r.CeilingOpsPerSec)
	}
	var none Result
	none.compare(0, 0)
	if none.XDriver != 0 || none.XCeiling != 0 {
		t.Error("a missing reference gave a ratio")
	}
	if refClients(sampleReport().Results[4]) != 32 || refClients(r) != 32 {
		t.Error("a history row is not compared at the whole workload's clients")
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := sampleReport().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	header := strings.Fields(lines[0])
	want := []string{"workload", "sync", "clients", "ops/s", "p50", "ms", "p95", "ms", "p99", "ms", "errors", "RSS", "MiB", "x", "driver", "x", "ceiling"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Fatalf("header %q", lines[0])
	}
	row := func(label string) []string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == label {
				return f
			}
		}
		t.Fatalf("no row %q in\n%s", label, out)
		return nil
	}
	a := row("append")
	if strings.Join(a[:4], " ") != "append normal 32 500" || !strings.HasPrefix(a[4], "5.0") {
		t.Errorf("append row %q", a)
	}
	if a[7] != "stale_lease=2" || a[8] != "timeout=1" || a[9] != "61" || a[10] != "0.50" || a[11] != "0.25" {
		t.Errorf("append row errors/RSS/ratios: %q", a)
	}
	if c := row("cycle"); c[1] != "full" || c[7] != "0" || c[8] != "-" || c[9] != "-" || c[10] != "-" {
		t.Errorf("cycle row without errors, RSS or references: %q", c)
	}
	if d := row("depth/1M"); d[2] != "1" {
		t.Errorf("depth row %q", d)
	}
	if h := row("history"); h[3] != "unavailable" || h[4] != "-" {
		t.Errorf("unavailable row %q", h)
	}
	row("history/list")
	for _, note := range []string{
		"cycle [full]: 812 runs/s",
		"depth/1M [normal]: seeded in 93.2s; claim p50 1.10x that at 1k queued",
		"history [normal]: the server does not serve GET /v1/attempts",
	} {
		if !strings.Contains(out, note+"\n") {
			t.Errorf("table lacks the note %q:\n%s", note, out)
		}
	}
	// Columns line up: every row's "sync" column ends where the header's does.
	end := strings.Index(lines[0], "sync") + len("sync")
	for _, l := range lines[1:6] {
		if !strings.HasSuffix(l[:end], "normal") && !strings.HasSuffix(l[:end], "full") {
			t.Errorf("row not aligned under the header: %q", l)
		}
	}
}

func TestJSONHasTheTableFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := sampleReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Mode    string           `json:"mode"`
		CPUs    int              `json:"cpus"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if raw.Mode != "local" || raw.CPUs != 2 || len(raw.Results) != 5 {
		t.Fatalf("report %+v", raw)
	}
	a := raw.Results[0]
	for _, k := range []string{"workload", "sync", "clients", "status", "ops", "seconds", "opsPerSec", "p50Ms", "p95Ms",
		"p99Ms", "maxMs", "errors", "rssMiB", "driverOpsPerSec", "ceilingOpsPerSec", "xDriver", "xCeiling"} {
		if _, ok := a[k]; !ok {
			t.Errorf("append row lacks %q: %v", k, a)
		}
	}
	if a["workload"] != "append" || a["opsPerSec"] != 500.0 || a["xDriver"] != 0.5 {
		t.Errorf("append row %v", a)
	}
	if errs, _ := a["errors"].(map[string]any); errs["stale_lease"] != 2.0 || errs["timeout"] != 1.0 {
		t.Errorf("append errors %v", a["errors"])
	}
	if raw.Results[1]["runsPerSec"] != 812.5 {
		t.Errorf("cycle runsPerSec %v", raw.Results[1]["runsPerSec"])
	}
	if d := raw.Results[2]; d["queued"] != 1e6 || d["seedSeconds"] != 93.24 {
		t.Errorf("depth row %v", d)
	}
	if h := raw.Results[3]; h["status"] != "unavailable" || !strings.Contains(h["note"].(string), "GET /v1/attempts") {
		t.Errorf("unavailable row %v", h)
	}
	if l := raw.Results[4]; l["part"] != "list" || l["workloadClients"] != 32.0 {
		t.Errorf("history part row %v", l)
	}
	// Round trip.
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Results[0].P99Ms != sampleReport().Results[0].P99Ms {
		t.Errorf("round trip: %v %+v", err, back.Results[0])
	}
}

func TestParseRSS(t *testing.T) {
	t.Parallel()
	metrics := `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 6.5011712e+07
process_start_time_seconds 1.7e+09
`
	if got := parseRSS(strings.NewReader(metrics)); got != 62 {
		t.Errorf("RSS %v MiB, want 62", got)
	}
	if got := parseRSS(strings.NewReader("go_goroutines 12\n")); got != 0 {
		t.Errorf("RSS without the metric: %v", got)
	}
}

func TestManifestHashIsJCS(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(contentRefs)
	canonical, err := releases.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canonical)
	if want := hex.EncodeToString(sum[:]); manifestHash() != want {
		t.Fatalf("manifest hash %s, want the JCS hash %s", manifestHash(), want)
	}
	if releases.ManifestHash(canonical) != manifestHash() {
		t.Fatalf("manifest hash %s, releases computes %s", manifestHash(), releases.ManifestHash(canonical))
	}
}

func TestRoutesMissing(t *testing.T) {
	t.Parallel()
	r := routes{"POST /v1/runs": true, "POST /v1/runs/claim": true}
	got := r.missing("POST /v1/runs", "POST /v1/attempts/{attemptId}/checkpoints")
	if len(got) != 1 || got[0] != "POST /v1/attempts/{attemptId}/checkpoints" {
		t.Errorf("missing %v", got)
	}
	if routes(nil).missing("GET /x") != nil {
		t.Error("a server without an OpenAPI document should be assumed to serve every route")
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{ServerBinary: "/bin/true"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if len(c.Workloads) != 6 || len(c.Syncs) != 2 || c.Duration != 10*time.Second || c.RefDuration != c.Duration ||
		c.DepthClaims != 500 || len(c.DepthSizes) != 2 || c.DepthSizes[1] != 1_000_000 || c.NoisyRate != 400 {
		t.Errorf("defaults %+v", c)
	}
	if c.clients(Append) != 32 || c.clients(Cycle) != 16 || c.clients(History) != 32 || c.clients(SDK) != 16 || c.clients(Noisy) != 8 {
		t.Error("per-workload client defaults")
	}
	c.Clients = 4
	if c.clients(Append) != 4 || c.clients(Cycle) != 4 {
		t.Error("--clients does not override the defaults")
	}
	for _, bad := range []Config{
		{Workloads: []string{"nope"}},
		{Syncs: []string{"off"}},
		{URL: "http://127.0.0.1:1", AdminKey: "a"},
		{DepthSizes: []int{100}, DepthClaims: 500},
	} {
		bad.ServerBinary = "/bin/true"
		if err := bad.defaults(); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}
