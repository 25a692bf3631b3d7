package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// ledgerBinary builds ./cmd/ledger once for the package's tests.
func ledgerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "ledger-bench-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "ledger")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/ledger")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build ledger: %v", buildErr)
	}
	return builtBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

func runJSON(t *testing.T, cfg Config) (*Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg.JSON = true
	var stdout, stderr bytes.Buffer
	if err := Run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	return &rep, stderr.String()
}

func findRow(t *testing.T, rep *Report, label, sync string, clients int) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Label() == label && r.Sync == sync && (clients == 0 || r.Clients == clients) {
			return r
		}
	}
	t.Fatalf("no row %s [%s] with %d clients in %+v", label, sync, clients, rep.Results)
	return Result{}
}

// checkMeasured checks a row that ran: operations, ordered percentiles, no failures, and
// the ratios to the references measured at its clients.
func checkMeasured(t *testing.T, rep *Report, r Result) {
	t.Helper()
	if r.Ops == 0 || r.OpsPerSec <= 0 {
		t.Errorf("%s: no operations: %+v", r.Label(), r)
	}
	if !(r.P50Ms > 0 && r.P50Ms <= r.P95Ms && r.P95Ms <= r.P99Ms && r.P99Ms <= r.MaxMs) {
		t.Errorf("%s: percentiles out of order: p50 %v p95 %v p99 %v max %v", r.Label(), r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs)
	}
	if len(r.Errors) != 0 {
		t.Errorf("%s: failed operations %v (%s)", r.Label(), r.Errors, r.Note)
	}
	if r.RSSMiB <= 0 {
		t.Errorf("%s: no server RSS", r.Label())
	}
	driver := findRow(t, rep, RefDriver, r.Sync, refClients(r))
	ceiling := findRow(t, rep, RefCeiling, r.Sync, refClients(r))
	if driver.OpsPerSec <= 0 || ceiling.OpsPerSec <= 0 {
		t.Fatalf("%s: references did not run: %+v %+v", r.Label(), driver, ceiling)
	}
	if r.XDriver != round(r.OpsPerSec/driver.OpsPerSec, 3) || r.XCeiling != round(r.OpsPerSec/ceiling.OpsPerSec, 3) {
		t.Errorf("%s: ratios %v %v, want %v/%v and %v/%v", r.Label(), r.XDriver, r.XCeiling,
			r.OpsPerSec, driver.OpsPerSec, r.OpsPerSec, ceiling.OpsPerSec)
	}
}

// checkTSRow: the TypeScript Worker's row ran whole runs and compares itself with the
// plain client, or says why it could not run (no node, no built SDK).
func checkTSRow(t *testing.T, r Result) {
	t.Helper()
	switch r.Status {
	case StatusUnavailable:
		if !strings.Contains(r.Note, "node") && !strings.Contains(r.Note, "TypeScript SDK") {
			t.Errorf("sdk/worker-ts unavailable without saying why: %q", r.Note)
		}
		t.Logf("sdk/worker-ts: %s", r.Note)
	case StatusOK:
		if r.RunsPerSec <= 0 || r.Ops == 0 || len(r.Errors) != 0 {
			t.Errorf("sdk/worker-ts: %+v", r)
		}
		if !strings.Contains(r.Note, "the plain client's runs/s (target 0.7x)") {
			t.Errorf("sdk/worker-ts does not compare itself with sdk/plain: %q", r.Note)
		}
	default:
		t.Errorf("sdk/worker-ts: status %q: %s", r.Status, r.Note)
	}
}

// TestLocalEndToEnd runs every workload, briefly, against servers the bench starts from
// the built binary. Workloads whose routes the binary does not serve yet must come back
// as "unavailable" rows, and the others must have run.
func TestLocalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts servers")
	}
	bin := ledgerBinary(t)
	dir := t.TempDir()
	rep, stderr := runJSON(t, Config{
		ServerBinary: bin, Dir: dir, Syncs: []string{"normal"}, Clients: 4,
		Duration: 2 * time.Second, RefDuration: time.Second,
		DepthSizes: []int{300, 600}, DepthClaims: 50,
		// The TypeScript row runs when the SDK is built (.ci/run builds it first).
		TSWorker: filepath.Join("..", "..", "..", "..", tsWorkerScript),
		PyWorker: filepath.Join("..", "..", "..", "..", pyWorkerScript),
	})
	if rep.Mode != "local" {
		t.Errorf("mode %q", rep.Mode)
	}
	if !strings.Contains(stderr, "ops/s") {
		t.Errorf("no progress line on stderr:\n%s", stderr)
	}
	for _, label := range []string{Append, Cycle, History, SDK} {
		var rows []Result
		for _, r := range rep.Results {
			if r.Workload == label {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			t.Fatalf("no %s row", label)
		}
		for _, r := range rows {
			if r.Label() == "sdk/worker-ts" {
				checkTSRow(t, r)
				continue
			}
			if r.Label() == "sdk/worker-py" {
				if r.Status != StatusOK || r.RunsPerSec <= 0 || r.Ops == 0 || len(r.Errors) != 0 {
					t.Errorf("sdk/worker-py: %+v", r)
				}
				continue
			}
			switch r.Status {
			case StatusUnavailable:
				if !strings.Contains(r.Note, "does not serve") {
					t.Errorf("%s unavailable without naming the route: %q", r.Label(), r.Note)
				}
				t.Logf("%s: %s", r.Label(), r.Note)
			case StatusOK:
				checkMeasured(t, rep, r)
				if (r.Workload == Cycle || r.Workload == SDK) && r.RunsPerSec <= 0 {
					t.Errorf("%s completed no run: %+v", r.Label(), r)
				}
				if r.Label() == "sdk/worker" && !strings.Contains(r.Note, "the plain client's runs/s") {
					t.Errorf("sdk/worker does not compare itself with sdk/plain: %q", r.Note)
				}
			default:
				t.Errorf("%s: status %q: %s", r.Label(), r.Status, r.Note)
			}
		}
	}
	// Claims and completes are served by every build: depth must have run at both sizes.
	small := findRow(t, rep, "depth/300", "normal", 1)
	large := findRow(t, rep, "depth/600", "normal", 1)
	for _, r := range []Result{small, large} {
		if r.Status != StatusOK || r.Ops != 50 {
			t.Fatalf("%s: status %q, %d claims, want 50: %s", r.Label(), r.Status, r.Ops, r.Note)
		}
		checkMeasured(t, rep, r)
	}
	if !strings.Contains(large.Note, "claim p50") {
		t.Errorf("the deepest row does not compare its p50 with the shallowest: %q", large.Note)
	}
	// Noisy: A's appends alone and under B's flood, both measured; A never refused.
	alone := findRow(t, rep, "noisy/a-alone", "normal", 4)
	with := findRow(t, rep, "noisy/a", "normal", 4)
	for _, r := range []Result{alone, with} {
		if r.Status != StatusOK || r.Ops == 0 || len(r.Errors) != 0 {
			t.Errorf("%s: status %q, %d ops, errors %v: %s", r.Label(), r.Status, r.Ops, r.Errors, r.Note)
		}
	}
	if with.P99VsAlone <= 0 || with.P99VsAlone != round(with.P99Ms/alone.P99Ms, 2) || !strings.Contains(with.Note, "A saw no 429") {
		t.Errorf("noisy/a does not compare its p99 with A alone: %v, %q", with.P99VsAlone, with.Note)
	}
	poll := findRow(t, rep, "noisy/b-poll", "normal", noisyBPolls)
	if !strings.Contains(poll.Note, "refused at once") || poll.Ops == 0 {
		t.Errorf("B's long polls: %d answered, %q", poll.Ops, poll.Note)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("temporary databases left behind in %s: %v %v", dir, entries, err)
	}
}

// TestRemoteEndToEnd runs cycle against a server the test started, through --url and keys;
// depth is reported skipped there.
func TestRemoteEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a server")
	}
	bin := ledgerBinary(t)
	ctx := context.Background()
	srv, err := startServer(ctx, bin, filepath.Join(t.TempDir(), "ledger.db"), "normal", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Stop(30 * time.Second); err != nil {
			t.Errorf("stop server: %v", err)
		}
	}()
	rep, _ := runJSON(t, Config{
		URL: srv.URL, AdminKey: srv.Keys.Admin, RuntimeKey: srv.Keys.Runtime, Syncs: []string{"full"}, Dir: t.TempDir(),
		Workloads: []string{Cycle, Depth}, Clients: 2, Duration: time.Second, RefDuration: 500 * time.Millisecond,
		Progress: -1,
	})
	if rep.Mode != "remote" || rep.URL != srv.URL {
		t.Errorf("mode %q url %q", rep.Mode, rep.URL)
	}
	c := findRow(t, rep, Cycle, "full", 2)
	switch c.Status {
	case StatusOK:
		checkMeasured(t, rep, c)
	case StatusUnavailable:
	default:
		t.Errorf("cycle: %q %s", c.Status, c.Note)
	}
	if d := findRow(t, rep, Depth, "full", 1); d.Status != StatusSkipped {
		t.Errorf("depth against a URL: status %q, want skipped", d.Status)
	}
	// A wrong key is a setup failure: Run fails, and says why.
	var out, errb bytes.Buffer
	err = Run(ctx, Config{URL: srv.URL, AdminKey: "nope", RuntimeKey: "nope", Workloads: []string{Cycle}, Dir: t.TempDir(),
		Duration: time.Second, Progress: -1}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("Run with a bad key: %v", err)
	}
}
