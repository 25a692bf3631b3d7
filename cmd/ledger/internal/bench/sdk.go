package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ledger-dev/ledger/api"
	sdk "github.com/ledger-dev/ledger/client"
)

// sdkWorkload measures whole runs (enqueue, claim, three checkpoints, complete) through the
// Go SDK's Worker, next to the same runs sent by the plain client (cycle's loop), one after
// the other on the same server: sdk/plain, then sdk/worker. Each worker handler writes three
// checkpoints and enqueues the run that follows it, so both rows send the same requests per
// run and keep the queue as deep; the worker's row notes its runs/s as a multiple of the
// plain row's.
func (b *bencher) sdkWorkload(ctx context.Context, t *target) []Result {
	n := b.cfg.clients(SDK)
	if miss := t.routes.missing(cycleRoutes...); len(miss) > 0 {
		return []Result{unavailable(SDK, t.sync, n, miss)}
	}
	plain := b.cycleRow(ctx, t, n, "sdk/plain")
	plain.Workload, plain.Part = SDK, "plain"
	worker := b.sdkWorkerRow(ctx, t, n)
	if plain.RunsPerSec > 0 && worker.Status == StatusOK {
		worker.Note = joinNote(worker.Note, fmt.Sprintf("%.2fx the plain client's runs/s", worker.RunsPerSec/plain.RunsPerSec))
	}
	ts := b.sdkTSRow(ctx, t, n)
	if plain.RunsPerSec > 0 && ts.Status == StatusOK {
		ts.Note = joinNote(ts.Note, fmt.Sprintf("%.2fx the plain client's runs/s (target 0.7x)", ts.RunsPerSec/plain.RunsPerSec))
	}
	py := b.sdkPyRow(ctx, t, n)
	if plain.RunsPerSec > 0 && py.Status == StatusOK {
		py.Note = joinNote(py.Note, fmt.Sprintf("%.2fx the plain client's runs/s", py.RunsPerSec/plain.RunsPerSec))
	}
	return []Result{plain, worker, ts, py}
}

// pyWorkerScript is the Python row's script, relative to the repository root.
const pyWorkerScript = "sdk/python/bench/worker.py"

// sdkPyRow runs the Python SDK's Worker (sdk/python/bench/worker.py, under python3, with the
// SDK on PYTHONPATH) as sdkTSRow runs the TypeScript one. Without python3 or the script the
// row is unavailable, saying why.
func (b *bencher) sdkPyRow(ctx context.Context, t *target, n int) Result {
	script := b.cfg.PyWorker
	if script == "" {
		script = pyWorkerScript
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return Result{Workload: SDK, Part: "worker-py", Sync: t.sync, Clients: n, Status: StatusUnavailable, Note: "python3 is not installed"}
	}
	if _, err := os.Stat(script); err != nil {
		return Result{Workload: SDK, Part: "worker-py", Sync: t.sync, Clients: n, Status: StatusUnavailable,
			Note: "no Python SDK bench script at " + script + " (run from the repository root or pass --py-worker)"}
	}
	env := append(os.Environ(), "PYTHONPATH="+filepath.Dir(filepath.Dir(script)))
	return b.sdkScriptRow(ctx, t, n, "worker-py", py, script, env)
}

// tsWorkerScript is the TypeScript row's script, relative to the repository root.
const tsWorkerScript = "sdk/typescript/bench/worker.mjs"

// sdkTSRow runs the TypeScript SDK's Worker (sdk/typescript/bench/worker.mjs, under node)
// with n handlers for the window, on runs of its own kind, and counts its whole runs as
// sdkWorkerRow does. Its requests are counted by the script, not timed: the row has no
// latencies. Without node or the built SDK the row is unavailable, saying why.
func (b *bencher) sdkTSRow(ctx context.Context, t *target, n int) Result {
	row := Result{Workload: SDK, Part: "worker-ts", Sync: t.sync, Clients: n}
	script := b.cfg.TSWorker
	if script == "" {
		script = tsWorkerScript
	}
	node, err := exec.LookPath("node")
	if err != nil {
		row.Status, row.Note = StatusUnavailable, "node is not installed"
		return row
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "..", "dist", "index.js")); err != nil {
		row.Status, row.Note = StatusUnavailable, "no built TypeScript SDK at "+filepath.Dir(filepath.Dir(script))+
			" (npm ci && npm run build there; run from the repository root or pass --ts-worker)"
		return row
	}
	return b.sdkScriptRow(ctx, t, n, "worker-ts", node, script, nil)
}

// sdkScriptRow runs one SDK's bench script (the interpreter and script given, env its
// environment, nil: this process's) with n handlers for the window, on runs of a kind of
// its own, and reads its {"runs","requests","errors"} line.
func (b *bencher) sdkScriptRow(ctx context.Context, t *target, n int, part, interpreter, script string, env []string) Result {
	row := Result{Workload: SDK, Part: part, Sync: t.sync, Clients: n}
	kind := "bench-sdk-" + part + "-" + b.tag
	spec := func() api.EnqueueRequest {
		e := b.enqueueBody()
		e.Kind, e.ProjectID = kind, "p0"
		return e
	}
	if err := seedRuns(ctx, t, n, spec); err != nil {
		row.Status, row.Note = StatusFailed, "seed the queue: "+err.Error()
		return row
	}
	b.logf("[%s] sdk/%s: %s %s, %d handlers", t.sync, part, filepath.Base(interpreter), script, n)
	rec := NewRecorder()
	stop := b.monitor(ctx, t, "sdk/"+part, rec)
	cmd := exec.CommandContext(ctx, interpreter, script, "--url", t.c.base, "--key", t.keys.runtime, "--kind", kind, "--project", "p0",
		"--release", t.releaseID(), "--adapter", adapterVersion, "--model", modelProfile,
		"--concurrency", strconv.Itoa(n), "--duration-ms", strconv.FormatInt(b.cfg.Duration.Milliseconds(), 10))
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	row.RSSMiB = stop()
	if err != nil {
		row.Status, row.Note = StatusFailed, fmt.Sprintf("%s %s: %v: %s", filepath.Base(interpreter), script, err, strings.TrimSpace(stderr.String()))
		return row
	}
	var res struct {
		Runs     int64            `json:"runs"`
		Requests int64            `json:"requests"`
		Errors   map[string]int64 `json:"errors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		row.Status, row.Note = StatusFailed, fmt.Sprintf("read %s's answer %q: %v", script, out, err)
		return row
	}
	secs := b.cfg.Duration.Seconds()
	row.Status, row.Seconds, row.Ops, row.Errors = StatusOK, secs, res.Requests, res.Errors
	row.OpsPerSec = round(float64(res.Requests)/secs, 1)
	row.RunsPerSec = round(float64(res.Runs)/secs, 1)
	row.Note = "requests counted, not timed"
	return row
}

// sdkWorkerRow runs a client.Worker of n handlers for the window. Its requests are timed by
// the transport under the SDK's client; its runs count when their completion lands inside
// the window.
func (b *bencher) sdkWorkerRow(ctx context.Context, t *target, n int) Result {
	row := Result{Workload: SDK, Part: "worker", Sync: t.sync, Clients: n}
	rec := NewRecorder()
	tt := &timedTransport{base: t.c.hc.Transport, rec: rec}
	c, err := sdk.New(sdk.WithBaseURL(t.c.base), sdk.WithKey(t.keys.runtime),
		sdk.WithHTTPClient(&http.Client{Transport: tt}),
		sdk.WithUserAgent("ledger-bench-sdk"))
	if err != nil {
		row.Status, row.Note = StatusFailed, err.Error()
		return row
	}
	kind := "bench-sdk-" + b.tag // claimed by this worker only
	spec := func() api.EnqueueRequest {
		e := b.enqueueBody()
		e.Kind = kind
		return e
	}
	if err := seedRuns(ctx, t, n, spec); err != nil {
		row.Status, row.Note = StatusFailed, "seed the queue: "+err.Error()
		return row
	}

	var runs atomic.Int64
	end := time.Now().Add(b.cfg.Duration)
	rec.CloseAt(end)
	w, err := sdk.NewWorker(c, sdk.WorkerConfig{
		HolderID: "bench-sdk-" + b.tag, ReleaseID: releaseID, AdapterVersion: adapterVersion, ModelProfileID: modelProfile,
		Kinds: []string{kind}, Concurrency: n, LeaseSeconds: 3600, WaitSeconds: 1, ShutdownGrace: 30 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Hooks: sdk.Hooks{Finished: func(r sdk.Result) {
			if r.Outcome == sdk.Succeeded && time.Now().Before(end) {
				runs.Add(1)
			}
		}},
	}, func(ctx context.Context, l *sdk.Lease) error {
		for seq := int64(1); seq <= 3; seq++ {
			if _, err := l.Checkpoint(ctx, sdk.CheckpointInput{Phase: api.PhaseActing,
				StateRef: "bench://state/" + strconv.FormatInt(seq, 10),
				Hash:     fmt.Sprintf("%016x%016x", l.FencingToken(), seq)}); err != nil {
				return err
			}
		}
		if time.Now().Before(end) {
			if _, err := c.EnqueueRun(ctx, spec()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		row.Status, row.Note = StatusFailed, err.Error()
		return row
	}
	b.logf("[%s] sdk/worker: a Worker of %d handlers", t.sync, n)
	stop := b.monitor(ctx, t, "sdk/worker", rec)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	if err := w.Run(wctx); err != nil {
		row.Note = "worker: " + err.Error()
	}
	row.RSSMiB = stop()
	b.finishRow(&row, rec, nil)
	row.RunsPerSec = round(float64(runs.Load())/b.cfg.Duration.Seconds(), 1)
	if e := tt.empty.Load(); e > 0 {
		row.Note = joinNote(row.Note, fmt.Sprintf("%d claims answered 204", e))
	}
	return row
}

// timedTransport records every request's latency in rec, a failed one by its status, and
// counts the claims that found nothing.
type timedTransport struct {
	base  http.RoundTripper
	rec   *Recorder
	empty atomic.Int64
}

// seedRuns enqueues n runs made by spec, untimed, through the plain client: one per handler,
// so that each starts with work.
func seedRuns(ctx context.Context, t *target, n int, spec func() api.EnqueueRequest) error {
	for range n {
		a, err := t.c.do(ctx, http.MethodPost, "/v1/runs", t.keys.runtime, spec(), nil)
		if err == nil && !a.ok() {
			err = fmt.Errorf("%d %s", a.status, a.code)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (tt *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := tt.base.RoundTrip(r)
	switch {
	case err != nil:
		tt.rec.Record(time.Since(start), "transport")
	case res.StatusCode >= 400:
		tt.rec.Record(time.Since(start), "http_"+strconv.Itoa(res.StatusCode))
	default:
		tt.rec.Record(time.Since(start), "")
		if res.StatusCode == http.StatusNoContent && strings.HasSuffix(r.URL.Path, "/claim") {
			tt.empty.Add(1)
		}
	}
	return res, err
}
