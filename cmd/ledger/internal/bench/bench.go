// Package bench is `ledger bench`: it drives the service over HTTP with concurrent runtime
// clients and reports throughput, latency percentiles, errors by problem code and the
// server's resident memory, next to two references measured in the same run with the same
// clients and durability: the driver baseline (the same rows inserted straight through
// database/sql and SQLite, one row per transaction) and the HTTP ceiling (the same server
// answering GET /healthz).
//
// In local mode (the default) every durability setting gets a fresh server subprocess on a
// fresh database file on loopback; with URL set it drives that server instead.
package bench

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// Workload names.
const (
	Append  = "append"
	Cycle   = "cycle"
	Depth   = "depth"
	History = "history"
	Noisy   = "noisy"
	// SDK is whole runs through the Go SDK's Worker beside the same runs by the plain
	// client (sdk.go).
	SDK = "sdk"
)

// AllWorkloads are the workloads in the order they run.
var AllWorkloads = []string{Append, Cycle, History, SDK, Depth, Noisy}

// Config says what to measure. Zero values take the defaults named on each field.
type Config struct {
	// Workloads to run, in any order (default: all).
	Workloads []string
	// Syncs are the SQLite durability settings, each on its own fresh server: "normal" and
	// "full" (default both). Against URL only the first is used, to name the server's
	// setting and to run the driver baseline with.
	Syncs []string
	// Clients is the number of concurrent clients of every workload; 0 means each
	// workload's default (append 32, cycle 16, history 32: half appending, half reading;
	// sdk 16; noisy 8: tenant A's appenders, beside tenant B's fixed flood). Depth always
	// claims from one client, one claim after another.
	Clients int
	// TSWorker is the TypeScript SDK's bench script of the sdk workload (default
	// sdk/typescript/bench/worker.mjs, from the repository root; it needs the SDK built).
	TSWorker string
	// PyWorker is the Python SDK's bench script of the sdk workload (default
	// sdk/python/bench/worker.py, from the repository root).
	PyWorker string
	// Duration is each workload's measured window (default 10s).
	Duration time.Duration
	// NoisyRate is tenant A's appends per second in the noisy workload, spread over its
	// clients (default 400; negative: as fast as they can).
	NoisyRate float64
	// RefDuration is each reference's window (default Duration).
	RefDuration time.Duration
	// DepthSizes are the queue depths depth measures claims at, ascending (default 1000,
	// 1000000); DepthClaims is how many claims it times at each (default 500).
	DepthSizes  []int
	DepthClaims int
	// URL, AdminKey and RuntimeKey target a running server instead of starting one.
	URL        string
	AdminKey   string
	RuntimeKey string
	// ServerBinary is the ledger binary started for local mode (default os.Executable()).
	ServerBinary string
	// Dir is where local mode makes its temporary directory (default os.TempDir()).
	Dir string
	// RequestTimeout bounds every request (default 10s); StartTimeout a server's start
	// (default 60s).
	RequestTimeout time.Duration
	StartTimeout   time.Duration
	// Progress is how often the progress line is written to stderr (default 1s; negative:
	// never).
	Progress time.Duration
	// NoReferences skips the driver baseline and the HTTP ceiling.
	NoReferences bool
	// JSON writes the report as JSON instead of a table.
	JSON bool
}

func (c *Config) defaults() error {
	if len(c.Workloads) == 0 {
		c.Workloads = AllWorkloads
	}
	for _, w := range c.Workloads {
		if !slices.Contains(AllWorkloads, w) {
			return fmt.Errorf("unknown workload %q: want append, cycle, depth, history, sdk, noisy or all", w)
		}
	}
	if len(c.Syncs) == 0 {
		c.Syncs = []string{"normal", "full"}
	}
	for _, s := range c.Syncs {
		if s != "normal" && s != "full" {
			return fmt.Errorf("unknown sync %q: want normal, full or both", s)
		}
	}
	if c.Clients < 0 {
		return errors.New("clients must be at least 1")
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.NoisyRate == 0 {
		c.NoisyRate = 400
	}
	if c.RefDuration <= 0 {
		c.RefDuration = c.Duration
	}
	if len(c.DepthSizes) == 0 {
		c.DepthSizes = []int{1_000, 1_000_000}
	}
	slices.Sort(c.DepthSizes)
	if c.DepthSizes[0] <= 0 {
		return errors.New("depth sizes must be positive")
	}
	if c.DepthClaims <= 0 {
		c.DepthClaims = 500
	}
	if c.DepthClaims > c.DepthSizes[0] {
		return fmt.Errorf("depth claims (%d) must not exceed the smallest depth size (%d)", c.DepthClaims, c.DepthSizes[0])
	}
	if c.URL != "" && (c.AdminKey == "" || c.RuntimeKey == "") {
		return errors.New("a --url needs both --admin-key and --runtime-key")
	}
	if c.ServerBinary == "" && c.URL == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the ledger binary: %w", err)
		}
		c.ServerBinary = exe
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.Progress == 0 {
		c.Progress = time.Second
	}
	return nil
}

func (c *Config) has(w string) bool { return slices.Contains(c.Workloads, w) }

// clients is workload w's number of clients.
func (c *Config) clients(w string) int {
	if c.Clients > 0 {
		return c.Clients
	}
	switch w {
	case Cycle, SDK:
		return 16
	case Noisy:
		return 8
	default:
		return 32
	}
}

// Run measures what cfg says and writes the report to stdout (a table, or JSON), with a
// progress line on stderr while it runs. It fails only when it cannot set up: a server
// that does not start, a project it cannot create, a queue it cannot seed. Missed targets
// and failed operations are figures in the report, not errors. Rows measured before a
// setup failure are still written.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	b := &bencher{cfg: cfg, stderr: stderr, tag: randomTag()}
	b.rep = Report{Mode: "local", CPUs: runtime.NumCPU(), Started: time.Now().UTC().Truncate(time.Second),
		DurationSec: cfg.Duration.Seconds()}
	var err error
	if cfg.URL != "" {
		b.rep.Mode, b.rep.URL = "remote", cfg.URL
		err = b.remote(ctx)
	} else {
		for _, s := range cfg.Syncs {
			if err = b.local(ctx, s); err != nil {
				break
			}
		}
	}
	var werr error
	if cfg.JSON {
		werr = b.rep.WriteJSON(stdout)
	} else {
		werr = b.rep.WriteTable(stdout)
	}
	return errors.Join(err, werr)
}

// bencher is one run.
type bencher struct {
	cfg    Config
	stderr io.Writer
	tag    string // makes subjects unique across runs against one server
	rep    Report
	mu     sync.Mutex // guards stderr
}

// target is a server being measured: its client, keys and durability setting.
type target struct {
	c      *client
	keys   keys
	sync   string
	routes routes
	dir    string // local mode: where the driver baseline may write
	// release is the release the tenant registers and claims with ("": releaseID).
	release string
}

func (t *target) releaseID() string {
	if t.release == "" {
		return releaseID
	}
	return t.release
}

func (b *bencher) logf(format string, args ...any) {
	if b.cfg.Progress < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.stderr, "bench: "+format+"\n", args...)
}

func (b *bencher) add(rows ...Result) { b.rep.Results = append(b.rep.Results, rows...) }

// local measures one durability setting on fresh servers of its own.
func (b *bencher) local(ctx context.Context, sync string) error {
	dir, err := os.MkdirTemp(b.cfg.Dir, "ledger-bench-*")
	if err != nil {
		return fmt.Errorf("make a temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if b.cfg.has(Append) || b.cfg.has(Cycle) || b.cfg.has(History) || b.cfg.has(SDK) {
		if err := b.localMain(ctx, sync, dir); err != nil {
			return err
		}
	}
	if b.cfg.has(Depth) {
		if err := b.depth(ctx, sync, dir); err != nil {
			return err
		}
	}
	if b.cfg.has(Noisy) {
		return b.noisy(ctx, sync, dir)
	}
	return nil
}

func (b *bencher) localMain(ctx context.Context, sync, dir string) error {
	b.logf("[%s] starting a server on a fresh database", sync)
	srv, err := startServer(ctx, b.cfg.ServerBinary, filepath.Join(dir, "ledger.db"), sync, b.cfg.StartTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(30 * time.Second); err != nil {
			b.logf("[%s] stop server: %v", sync, err)
		}
	}()
	if srv.Keys.Admin == "" || srv.Keys.Runtime == "" {
		return errors.New("the server printed no bootstrap keys: is the database really new?")
	}
	t := &target{c: newClient(srv.URL, b.cfg.RequestTimeout, max(64, b.cfg.Clients)), keys: keysOf(srv), sync: sync, dir: dir}
	defer t.c.close()
	return b.measure(ctx, t)
}

// remote measures the server at cfg.URL.
func (b *bencher) remote(ctx context.Context) error {
	dir, err := os.MkdirTemp(b.cfg.Dir, "ledger-bench-*")
	if err != nil {
		return fmt.Errorf("make a temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	t := &target{c: newClient(b.cfg.URL, b.cfg.RequestTimeout, max(64, b.cfg.Clients)), keys: keys{b.cfg.AdminKey, b.cfg.RuntimeKey},
		sync: b.cfg.Syncs[0], dir: dir}
	defer t.c.close()
	if err := t.c.waitReady(ctx, b.cfg.StartTimeout, nil); err != nil {
		return err
	}
	if err := b.measure(ctx, t); err != nil {
		return err
	}
	if b.cfg.has(Depth) {
		b.add(Result{Workload: Depth, Sync: t.sync, Clients: 1, Status: StatusSkipped,
			Note: "local mode only: the queue is seeded straight into the database file"})
	}
	if b.cfg.has(Noisy) {
		b.add(Result{Workload: Noisy, Sync: t.sync, Clients: b.cfg.clients(Noisy), Status: StatusSkipped,
			Note: "local mode only: it makes a second tenant in the database file"})
	}
	return nil
}

// measure sets the tenant up on t, then runs append, cycle and history and their
// references.
func (b *bencher) measure(ctx context.Context, t *target) error {
	var err error
	if t.routes, err = t.c.routes(ctx); err != nil {
		return err
	}
	if err := b.setup(ctx, t); err != nil {
		return err
	}
	var rows []Result
	for _, w := range []string{Append, Cycle, History, SDK} {
		if !b.cfg.has(w) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		var got []Result
		switch w {
		case Append:
			got = b.appendWorkload(ctx, t)
		case Cycle:
			got = b.cycleWorkload(ctx, t)
		case History:
			got = b.historyWorkload(ctx, t)
		case SDK:
			got = b.sdkWorkload(ctx, t)
		}
		rows = append(rows, got...)
	}
	b.compare(ctx, t, rows)
	b.add(rows...)
	return ctx.Err()
}

// benchProjects are the projects every run is spread over (p0..p9).
const benchProjects = 10

// release is the release every claim names.
const (
	releaseID      = "bench-release"
	adapterVersion = "1.0"
	modelProfile   = "bench"
)

// contentRefs is the release's content, and manifestHash its hash: the JCS form of an
// array of plain ASCII strings is what encoding/json writes.
var contentRefs = []string{"bench://adapter"}

func contentRefsJSON() []json.RawMessage {
	out := make([]json.RawMessage, len(contentRefs))
	for i, r := range contentRefs {
		out[i], _ = json.Marshal(r)
	}
	return out
}

func manifestHash() string {
	b, _ := json.Marshal(contentRefs)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// setup creates the projects and registers and activates the release, through the API.
// A server that serves no release route needs no release.
func (b *bencher) setup(ctx context.Context, t *target) error {
	for i := range benchProjects {
		a, err := t.c.do(ctx, http.MethodPut, fmt.Sprintf("/v1/projects/p%d", i), t.keys.admin, api.PutProjectRequest{}, nil)
		if err != nil {
			return err
		}
		if !a.ok() {
			return fmt.Errorf("create project p%d: %d %s", i, a.status, a.code)
		}
	}
	state := api.ReleaseActive
	body := api.PutReleaseRequest{ManifestHash: manifestHash(), ContentRefs: contentRefsJSON(), State: &state}
	a, err := t.c.do(ctx, http.MethodPut, "/v1/releases/"+t.releaseID()+"/adapters/"+adapterVersion, t.keys.admin, body, nil)
	if err != nil {
		return err
	}
	switch {
	case a.ok():
	case a.status == http.StatusNotFound || a.status == http.StatusMethodNotAllowed ||
		(a.status == http.StatusBadRequest && t.routes != nil && !t.routes["PUT /v1/releases/{releaseId}/adapters/{adapterVersion}"]):
		b.logf("[%s] the server serves no release route: claiming without a release", t.sync)
	default:
		return fmt.Errorf("register release %s/%s: %d %s", t.releaseID(), adapterVersion, a.status, a.code)
	}
	return nil
}

// monitor writes the progress line every cfg.Progress and samples the server's RSS every
// second until stop is called; stop returns the largest RSS seen (one last sample
// included).
func (b *bencher) monitor(ctx context.Context, t *target, label string, recs ...*Recorder) (stop func() float64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak float64
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := b.cfg.Progress
		if every <= 0 {
			every = time.Second
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		var lastOK int64
		last := start
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				peak = max(peak, t.c.rss(ctx))
				var ok, failed int64
				for _, r := range recs {
					o, f := r.Counts()
					ok += o
					failed += f
				}
				rate := float64(ok-lastOK) / now.Sub(last).Seconds()
				lastOK, last = ok, now
				b.logf("[%s] %s %3.0fs: %d ops, %.0f ops/s, %d errors, RSS %.0f MiB",
					t.sync, label, now.Sub(start).Seconds(), ok, rate, failed, peak)
			}
		}
	}()
	return func() float64 {
		close(done)
		wg.Wait()
		peak = max(peak, t.c.rss(context.WithoutCancel(ctx)))
		var ok, failed int64
		for _, r := range recs {
			o, f := r.Counts()
			ok += o
			failed += f
		}
		d := time.Since(start)
		b.logf("[%s] %s done: %d ops in %.1fs, %.0f ops/s, %d errors, peak RSS %.0f MiB",
			t.sync, label, ok, d.Seconds(), float64(ok)/d.Seconds(), failed, peak)
		return peak
	}
}

// compare measures the references for rows' client counts and sets the rows' ratios.
func (b *bencher) compare(ctx context.Context, t *target, rows []Result) {
	if b.cfg.NoReferences {
		return
	}
	counts := map[int]bool{}
	for _, r := range rows {
		if r.Status == StatusOK {
			counts[refClients(r)] = true
		}
	}
	refs := map[int][2]float64{}
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		if ctx.Err() != nil {
			return
		}
		driver := b.driverBaseline(ctx, t.dir, t.sync, n)
		ceiling := b.httpCeiling(ctx, t, n)
		refs[n] = [2]float64{driver.OpsPerSec, ceiling.OpsPerSec}
		b.add(driver, ceiling)
	}
	for i := range rows {
		if rows[i].Status == StatusOK {
			r := refs[refClients(rows[i])]
			rows[i].compare(r[0], r[1])
		}
	}
}

// refClients is the client count a row is compared at: the whole workload's.
func refClients(r Result) int {
	if r.WorkloadClients > 0 {
		return r.WorkloadClients
	}
	return r.Clients
}

func randomTag() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprint(time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// unavailable is the row of a workload whose routes the server does not serve.
func unavailable(w, sync string, clients int, missing []string) Result {
	return Result{Workload: w, Sync: sync, Clients: clients, Status: StatusUnavailable, Errors: map[string]int64{},
		Note: "the server does not serve " + strings.Join(missing, ", ")}
}
