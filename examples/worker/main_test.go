package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// proc is a started worker process whose standard output is read line by line.
type proc struct {
	cmd   *exec.Cmd
	lines chan string
	out   strings.Builder
}

func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan string, 256)}
	p.cmd.Env = env
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return p
}

// await reads lines until one matches re and returns its submatches; it fails the test if
// the process ends first or nothing matches within two minutes (a hang, not a timing
// expectation).
func (p *proc) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("worker ended before a line matching %s; stderr:\n%s", re, p.out.String())
			}
			t.Log(line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %s; stderr:\n%s", re, p.out.String())
		}
	}
}

// The example worker, killed with SIGKILL half way through a run, resumes it from its last
// checkpoint when started again: no step is done twice, the tool call is made once, and
// the run ends succeeded on its second attempt.
func TestExampleWorkerResumesAfterBeingKilled(t *testing.T) {
	t.Parallel()
	bin := build(t)
	ctx := context.Background()
	sv := newService(t)
	clock, a, url, adminKey := sv.clock, sv.app, sv.url, sv.adminKey
	env := sv.env
	const steps = 6

	first := start(t, bin, env, "--enqueue", "1", "--steps", strconv.Itoa(steps), "--step-time", "150ms")
	runID := uuid.MustParse(first.await(t, regexp.MustCompile(`^run (\S+): enqueued$`))[1])
	first.await(t, regexp.MustCompile(`^run \S+: step 3/\d+ done$`))
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	// The dead worker's lease passes; the reaper gives the run back.
	clock.Advance(time.Hour)
	if res, err := a.Runs.Reap(ctx); err != nil || res.TakenBack != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	clock.Advance(11 * time.Minute) // past the take-back's backoff

	second := start(t, bin, env, "--runs", "1", "--steps", strconv.Itoa(steps), "--step-time", "10ms")
	m := second.await(t, regexp.MustCompile(`^run (\S+): resuming after step (\d+) of \d+ \(attempt 2\)$`))
	resumedAfter, _ := strconv.Atoi(m[2])
	if m[1] != runID.String() || resumedAfter < 3 || resumedAfter >= steps {
		t.Fatalf("resumed %s after step %d", m[1], resumedAfter)
	}
	second.await(t, regexp.MustCompile(`^run \S+: succeeded$`))
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second worker: %v\n%s", err, second.out.String())
	}

	c, err := client.New(client.WithBaseURL(url), client.WithKey(adminKey))
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.GetRun(ctx, runID)
	if err != nil || run.State != api.RunEnded || *run.Outcome != api.OutcomeSucceeded {
		t.Fatalf("run %+v, %v", run, err)
	}
	var states []string
	calls := 0
	attempts := 0
	for at, err := range c.Attempts(ctx, api.ListAttemptsParams{RunID: &runID}) {
		if err != nil {
			t.Fatal(err)
		}
		attempts++
		for cp, err := range c.Checkpoints(ctx, at.AttemptID) {
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, cp.AdapterStateRef)
		}
		for _, err := range c.Calls(ctx, at.AttemptID) {
			if err != nil {
				t.Fatal(err)
			}
			calls++
		}
	}
	// Attempts come newest first; each step's checkpoint exists once.
	seen := map[string]int{}
	for _, s := range states {
		seen[s]++
	}
	for i := 1; i <= steps; i++ {
		if seen["step="+strconv.Itoa(i)] != 1 {
			t.Fatalf("checkpoints %v: step=%d not exactly once", states, i)
		}
	}
	if attempts != 2 || len(states) != steps || calls != 1 {
		t.Fatalf("%d attempts, checkpoints %v, %d calls", attempts, states, calls)
	}
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildOut  []byte
)

// build builds the example once for the package's tests.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: tests that build the example and run it as a process are skipped")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build the example")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "example-worker-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "worker")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		buildOut, buildErr = exec.CommandContext(ctx, gobin, "build", "-o", buildBin, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return buildBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildBin != "" {
		os.RemoveAll(filepath.Dir(buildBin))
	}
	os.Exit(code)
}

// service is the ledger in process (injected clock) with a tenant's keys, and the
// environment that points the example at it.
type service struct {
	clock    *dbtest.Clock
	app      *app.App
	url      string
	adminKey string
	env      []string
}

func newService(t *testing.T) service {
	t.Helper()
	ctx := context.Background()
	st := apitest.New(t, apitest.Config{Epoch: time.Now(), Serve: true})
	a := st.App
	tenant := dbtest.NewTenant(t, st.DB)
	adminKey, _, err := a.Keys.CreateKey(ctx, tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtimeKey, _, err := a.Keys.CreateKey(ctx, tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	return service{clock: st.Clock, app: a, url: st.URL, adminKey: adminKey,
		env: []string{"LEDGER_URL=" + st.URL, "LEDGER_KEY=" + runtimeKey, "LEDGER_ADMIN_KEY=" + adminKey}}
}

// With --decision the example waits half way for an approval, and carries on once an
// admin approves it.
func TestExampleWorkerWaitsForItsDecision(t *testing.T) {
	t.Parallel()
	bin := build(t)
	sv := newService(t)
	p := start(t, bin, sv.env, "--enqueue", "1", "--steps", "2", "--step-time", "10ms", "--decision", "--runs", "1")
	runID := uuid.MustParse(p.await(t, regexp.MustCompile(`^run (\S+): enqueued$`))[1])
	p.await(t, regexp.MustCompile(`^run \S+: waiting for approval`))
	admin, err := client.New(client.WithBaseURL(sv.url), client.WithKey(sv.adminKey))
	if err != nil {
		t.Fatal(err)
	}
	// The line comes just before the decision is asked: wait for it in the run's decisions.
	d := pendingDecision(t, admin, runID)
	if _, err := admin.AnswerPending(context.Background(), d.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved}); err != nil {
		t.Fatal(err)
	}
	p.await(t, regexp.MustCompile(`^run \S+: succeeded$`))
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("worker: %v\n%s", err, p.out.String())
	}
}

// pendingDecision waits until the run has asked its decision and returns it.
func pendingDecision(t *testing.T, admin *client.Client, runID uuid.UUID) api.Decision {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		page, err := admin.ListRunDecisions(context.Background(), runID, api.PageParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 0 {
			return page.Items[0].Decision
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision asked within two minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The example worker killed with SIGTERM or SIGKILL while its run waits for a decision: the
// decision stays pending and answerable, the run spends no attempt for the wait, the answer
// makes it due at once, and the worker started again carries on with the answer (the same
// decision: none asked twice).
func TestExampleWorkerKilledWhileWaitingForItsDecision(t *testing.T) {
	t.Parallel()
	for _, sig := range []string{"SIGTERM", "SIGKILL"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			bin := build(t)
			sv := newService(t)
			ctx := context.Background()
			admin, err := client.New(client.WithBaseURL(sv.url), client.WithKey(sv.adminKey))
			if err != nil {
				t.Fatal(err)
			}
			first := start(t, bin, sv.env, "--enqueue", "1", "--steps", "2", "--step-time", "10ms", "--decision")
			runID := uuid.MustParse(first.await(t, regexp.MustCompile(`^run (\S+): enqueued$`))[1])
			first.await(t, regexp.MustCompile(`^run \S+: waiting for approval`))
			d := pendingDecision(t, admin, runID)
			if sig == "SIGTERM" {
				if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				first.await(t, regexp.MustCompile(`^run \S+: parked$`))
				if err := first.cmd.Wait(); err != nil {
					t.Fatalf("worker after SIGTERM: %v\n%s", err, first.out.String())
				}
			} else {
				if err := first.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = first.cmd.Wait()
				// The dead worker's lease passes; the reaper parks the run on its decision.
				sv.clock.Advance(time.Hour)
				if res, err := sv.app.Runs.Reap(ctx); err != nil || res.TakenBack != 1 {
					t.Fatalf("reap: %+v, %v", res, err)
				}
			}
			got, _, err := admin.GetDecision(ctx, d.DecisionID)
			if err != nil || got.Status != api.DecisionPending {
				t.Fatalf("decision after %s: %s %v", sig, got.Status, err)
			}
			run, err := admin.GetRun(ctx, runID)
			if err != nil || run.State != api.RunQueued || run.AttemptsSpent != 0 {
				t.Fatalf("run after %s: %s, %d attempts spent (%v)", sig, run.State, run.AttemptsSpent, err)
			}
			if _, err := admin.AnswerPending(ctx, d.DecisionID, api.AnswerDecisionRequest{Status: api.AnswerApproved}); err != nil {
				t.Fatal(err)
			}
			// Due at once: no clock advance is needed for the next claim.
			second := start(t, bin, sv.env, "--runs", "1", "--steps", "2", "--step-time", "10ms", "--decision")
			m := second.await(t, regexp.MustCompile(`^run \S+: decision (\S+) approved$`))
			if m[1] != d.DecisionID.String() {
				t.Fatalf("resumed with decision %s, want %s", m[1], d.DecisionID)
			}
			second.await(t, regexp.MustCompile(`^run \S+: succeeded$`))
			if err := second.cmd.Wait(); err != nil {
				t.Fatalf("second worker: %v\n%s", err, second.out.String())
			}
			page, err := admin.ListRunDecisions(ctx, runID, api.PageParams{})
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("the run asked %d decisions (%v), want 1", len(page.Items), err)
			}
			if run, err = admin.GetRun(ctx, runID); err != nil || run.AttemptsSpent != 0 {
				t.Fatalf("run at the end: %d attempts spent (%v), want 0", run.AttemptsSpent, err)
			}
		})
	}
}
