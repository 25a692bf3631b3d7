package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/serveproc"
)

// The noisy workload's shape (DESIGN.md section 6: one tenant's load must never make
// another tenant's requests fail). Tenant A is the bootstrap tenant; tenant B is made for
// the run.
const (
	noisyTenantB = "bench-noisy-b"
	// noisyBAppenders is how many of B's clients append under a lease each: more than A
	// has, so B alone could take most of the writer.
	noisyBAppenders = 32
	// noisyBPolls is how many of B's clients long-poll for work B never enqueues: twice the
	// default per-tenant cap (--tenant-max-long-polls 64), so B holds every long poll it
	// may and half its polls are refused at once.
	noisyBPolls = 128
	// noisyWait is the waitSeconds of B's long polls (below the request timeout).
	noisyWait = 5
)

// noisyRoutes are what the noisy workload needs (A and B append, B long-polls).
var noisyRoutes = appendRoutes

// noisy measures, on a fresh server with the service's default limits (unlike the other
// workloads, which lift them to measure the service itself), tenant A's appends alone and
// then again while tenant B floods the server with long-poll claims and appends. Rows:
// noisy/a-alone and noisy/a (A's appends; the second says its p99 against the first, and
// whether A saw any 429), noisy/b-append and noisy/b-poll (what B got).
func (b *bencher) noisy(ctx context.Context, syncMode, dir string) error {
	n := b.cfg.clients(Noisy)
	path := filepath.Join(dir, "noisy.db")
	b.logf("[%s] noisy: starting a server with the default limits on a fresh database", syncMode)
	srv, err := serveproc.Start(ctx, b.cfg.ServerBinary, path, b.cfg.StartTimeout, "--sqlite-sync", syncMode)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(30 * time.Second); err != nil {
			b.logf("[%s] stop server: %v", syncMode, err)
		}
	}()
	if srv.Keys.Admin == "" || srv.Keys.Runtime == "" {
		return errors.New("the server printed no bootstrap keys: is the database really new?")
	}
	keysB, err := createTenant(ctx, b.cfg.ServerBinary, path, noisyTenantB)
	if err != nil {
		return err
	}
	c := newClient(srv.URL, b.cfg.RequestTimeout, n+noisyBAppenders+noisyBPolls)
	defer c.close()
	ta := &target{c: c, keys: keysOf(srv), sync: syncMode, dir: dir}
	// Release ids are global: B registers its own.
	tb := &target{c: c, keys: keysB, sync: syncMode, dir: dir, release: releaseID + "-b"}
	if ta.routes, err = c.routes(ctx); err != nil {
		return err
	}
	tb.routes = ta.routes
	if miss := ta.routes.missing(noisyRoutes...); len(miss) > 0 {
		b.add(unavailable(Noisy, syncMode, n, miss))
		return nil
	}
	for _, t := range []*target{ta, tb} {
		if err := b.setup(ctx, t); err != nil {
			return err
		}
	}
	b.add(b.noisyMeasure(ctx, ta, tb, n)...)
	return ctx.Err()
}

// createTenant makes tenant with an admin and a runtime key through `ledger keys create` on
// the database at path (the server keeps running: SQLite takes a second process).
func createTenant(ctx context.Context, bin, path, tenant string) (keys, error) {
	var k keys
	for _, role := range []string{"admin", "runtime"} {
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, "keys", "create", "--db", path, "--tenant", tenant, "--role", role)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return keys{}, fmt.Errorf("ledger keys create --tenant %s --role %s: %w: %s", tenant, role, err, strings.TrimSpace(errb.String()))
		}
		var last string
		for sc := bufio.NewScanner(&out); sc.Scan(); {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				last = l
			}
		}
		if role == "admin" {
			k.admin = last
		} else {
			k.runtime = last
		}
	}
	return k, nil
}

// noisyMeasure runs A alone, then A under B's flood, and returns the rows.
func (b *bencher) noisyMeasure(ctx context.Context, ta, tb *target, n int) []Result {
	b.logf("[%s] noisy: tenant A's %d clients take a lease each", ta.sync, n)
	recAlone := NewRecorder()
	leases := b.acquireAll(ctx, ta, n, recAlone)
	defer b.release(ctx, ta, leases)
	alone := b.appendPhase(ctx, ta, "noisy/a-alone", leases, recAlone)
	alone.Part = "a-alone"

	// B's flood: appenders under leases, and long polls that never find work.
	flood, stopFlood := context.WithCancel(ctx)
	defer stopFlood()
	recBAppend := NewRecorder()
	b.logf("[%s] noisy: tenant B floods: %d appenders, %d long polls", tb.sync, noisyBAppenders, noisyBPolls)
	bLeases := b.acquireAll(ctx, tb, noisyBAppenders, recBAppend)
	defer b.release(ctx, tb, bLeases)
	var polls pollCounts
	var wg sync.WaitGroup
	floodStart := time.Now()
	for i := range noisyBPolls {
		wg.Add(1)
		go func() { defer wg.Done(); b.pollLoop(flood, tb, i, &polls) }()
	}
	for i, l := range bLeases {
		if l != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.appendLoop(flood, tb, noisyBPolls+i, l, recBAppend, time.Now().Add(24*time.Hour))
			}()
		}
	}
	// B is at its caps once the long polls it may hold are waiting and the rest were
	// refused; give it until then (or a few seconds) before A's window opens.
	settle := time.Now().Add(5 * time.Second)
	for polls.refused.Load() == 0 && time.Now().Before(settle) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}

	recWith := NewRecorder()
	with := b.appendPhase(ctx, ta, "noisy/a", leases, recWith)
	with.Part = "a"
	stopFlood()
	wg.Wait()
	floodFor := time.Since(floodStart)

	var notes []string
	if alone.Status == StatusOK && with.Status == StatusOK && alone.P99Ms > 0 {
		with.P99VsAlone = round(with.P99Ms/alone.P99Ms, 2)
		notes = append(notes, fmt.Sprintf("p99 %.2fx A alone (target at most 2x)", with.P99VsAlone))
	}
	if n := with.Errors["rate_limited"]; n > 0 {
		notes = append(notes, fmt.Sprintf("A saw %d 429s (target none)", n))
	} else {
		notes = append(notes, "A saw no 429")
	}
	with.Note = joinNote(with.Note, strings.Join(notes, "; "))

	bAppend := Result{Workload: Noisy, Part: "b-append", Sync: tb.sync, Clients: noisyBAppenders}
	h, errs := recBAppend.Snapshot()
	bAppend.fill(h, errs, floodFor)
	if k := held(bLeases); k < len(bLeases) {
		bAppend.Note = fmt.Sprintf("%d of %d clients got no lease", len(bLeases)-k, len(bLeases))
	}
	bPoll := Result{Workload: Noisy, Part: "b-poll", Sync: tb.sync, Clients: noisyBPolls, Status: StatusOK,
		Ops: polls.answered.Load(), Seconds: round(floodFor.Seconds(), 3), Errors: polls.errors()}
	bPoll.OpsPerSec = round(float64(bPoll.Ops)/floodFor.Seconds(), 1)
	bPoll.Note = fmt.Sprintf("%d waited out their %ds, %d refused at once (204 with Retry-After), %d claimed a run",
		polls.waited.Load(), noisyWait, polls.refused.Load(), polls.claimed.Load())
	return []Result{alone, with, bAppend, bPoll}
}

// appendPhase has the clients holding leases append for the measured window and returns
// the row (label names it in the progress lines).
func (b *bencher) appendPhase(ctx context.Context, t *target, label string, leases []*lease, rec *Recorder) Result {
	end := time.Now().Add(b.cfg.Duration)
	rec.CloseAt(end)
	stop := b.monitor(ctx, t, label, rec)
	every := time.Duration(0)
	if b.cfg.NoisyRate > 0 {
		every = time.Duration(float64(len(leases)) / b.cfg.NoisyRate * float64(time.Second))
	}
	parallel(len(leases), func(i int) {
		if leases[i] != nil {
			b.pacedAppendLoop(ctx, t, i, leases[i], rec, end, every)
		}
	})
	row := Result{Workload: Noisy, Sync: t.sync, Clients: len(leases), RSSMiB: stop()}
	b.finishRow(&row, rec, leases)
	return row
}

// pollCounts are the outcomes of B's long polls.
type pollCounts struct {
	answered, waited, refused, claimed, limited, failed atomic.Int64
}

func (p *pollCounts) errors() map[string]int64 {
	errs := map[string]int64{}
	if n := p.limited.Load(); n > 0 {
		errs["rate_limited"] = n
	}
	if n := p.failed.Load(); n > 0 {
		errs["other"] = n
	}
	return errs
}

// pollLoop long-polls for B's work until ctx ends, as a fleet larger than its long-poll cap
// would: a claim refused at once waits its Retry-After before asking again; a run it
// happens to claim (one of B's appenders' enqueues) is completed at once.
func (b *bencher) pollLoop(ctx context.Context, t *target, client int, p *pollCounts) {
	body := b.claimBody(t, client, 60)
	wait := noisyWait
	body.WaitSeconds = &wait
	for ctx.Err() == nil {
		var cl claimed
		a, err := t.c.do(ctx, http.MethodPost, "/v1/runs/claim", t.keys.runtime, body, &cl)
		if err != nil {
			return
		}
		p.answered.Add(1)
		wait := time.Duration(0)
		switch {
		case a.ok() && a.status == http.StatusOK:
			p.claimed.Add(1)
			_, _ = t.c.do(ctx, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/complete", t.keys.runtime,
				completeBody(cl.Lease.FencingToken), nil)
		case a.ok() && a.retry:
			p.refused.Add(1)
			wait = a.retryAfter
		case a.ok():
			p.waited.Add(1)
		case a.code == "rate_limited":
			p.limited.Add(1)
			wait = max(a.retryAfter, 50*time.Millisecond)
		default:
			p.failed.Add(1)
			wait = 50 * time.Millisecond
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}
