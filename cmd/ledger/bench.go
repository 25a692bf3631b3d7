package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/bench"
)

// runBench is `ledger bench`: the flags become a bench.Config; internal/bench does the rest.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "crash" {
		return runBenchCrash(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("bench", stdout)
	var (
		cfg        bench.Config
		workload   string
		syncs      string
		depthSizes string
		quiet      bool
	)
	fs.StringVar(&workload, "workload", "all", "append, cycle, depth, history, sdk, noisy or all (or a comma-separated list)")
	fs.StringVar(&syncs, "sync", "both", "SQLite durability to measure, each on a fresh server: normal, full or both (with --url: the server's setting, for the driver baseline)")
	fs.IntVar(&cfg.Clients, "clients", 0, "concurrent clients (0: append 32, cycle 16, history 32, sdk 16, noisy 8 for tenant A; depth claims from one)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "each workload's measured window")
	fs.Float64Var(&cfg.NoisyRate, "noisy-rate", 400, "noisy: tenant A's appends per second over its clients (negative: as fast as they can)")
	fs.DurationVar(&cfg.RefDuration, "ref-duration", 0, "each reference's window (0: --duration)")
	fs.StringVar(&depthSizes, "depth-sizes", "1000,1000000", "queue depths depth measures claims at")
	fs.IntVar(&cfg.DepthClaims, "depth-claims", 500, "claims depth times at each queue depth")
	fs.StringVar(&cfg.URL, "url", "", "measure the running server at this URL instead of starting one (depth is skipped)")
	fs.StringVar(&cfg.AdminKey, "admin-key", "", "with --url: an admin key of the tenant to measure")
	fs.StringVar(&cfg.RuntimeKey, "runtime-key", "", "with --url: a runtime key of the same tenant")
	fs.StringVar(&cfg.Dir, "dir", "", "where the temporary databases go (default: the system temporary directory)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 10*time.Second, "bound on every request")
	fs.BoolVar(&cfg.NoReferences, "no-references", false, "skip the driver baseline and the HTTP ceiling")
	fs.BoolVar(&cfg.JSON, "json", false, "write the report as JSON instead of a table")
	fs.StringVar(&cfg.TSWorker, "ts-worker", "", "sdk: the TypeScript SDK's bench script (default sdk/typescript/bench/worker.mjs; run npm ci && npm run build in sdk/typescript first)")
	fs.StringVar(&cfg.PyWorker, "py-worker", "", "sdk: the Python SDK's bench script (default sdk/python/bench/worker.py)")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if workload != "all" {
		cfg.Workloads = splitList(workload)
	}
	switch syncs {
	case "both":
		cfg.Syncs = []string{"normal", "full"}
	default:
		cfg.Syncs = splitList(syncs)
	}
	for _, s := range splitList(depthSizes) {
		n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad --depth-sizes entry %q", s)
		}
		cfg.DepthSizes = append(cfg.DepthSizes, n)
	}
	if quiet {
		cfg.Progress = -1
	}
	return bench.Run(ctx, cfg, stdout, stderr)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
