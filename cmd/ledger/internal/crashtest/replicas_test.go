package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Skipf("no go command to build the binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ledger")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ledger")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestTwoReplicasOneDatabase runs two `ledger serve` processes on one SQLite file, each
// with its own reaper, and spreads holders over both with one-second leases that expire
// under them: no (run, token) is leased twice, no run takes two completions, every run
// ends, and attempts and runs agree.
func TestTwoReplicasOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: skipped with -short")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "ledger.db")
	flags := []string{"--reaper-interval", "100ms", "--lease-ttl", "1s"}
	a, err := start(ctx, bin, db, flags...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Kill()
	b, err := start(ctx, bin, db, flags...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	urlA, urlB := a.URL, b.URL
	c := &client{admin: a.Keys.Admin, runtime: a.Keys.Runtime, http: &http.Client{Timeout: 10 * time.Second}}
	if err := c.setup(ctx, urlA); err != nil {
		t.Fatal(err)
	}
	urls := []string{urlA, urlB}

	var (
		mu        sync.Mutex
		enqueued  = map[uuid.UUID]bool{}
		leased    = map[string]int{} // run/token -> claims
		completed = map[uuid.UUID]int{}
	)
	const nRuns = 200
	for i := range nRuns {
		var run struct {
			RunID uuid.UUID `json:"runId"`
		}
		body := map[string]any{"subject": fmt.Sprintf("s-%d", i), "kind": "k", "projectId": "crash", "agentId": "a",
			"stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "maxAttempts": 1000}
		if code, err := c.call(ctx, "POST", urls[i%2]+"/v1/runs", c.runtime, body, &run); err != nil || code != 201 {
			t.Fatalf("enqueue: %d %v", code, err)
		}
		enqueued[run.RunID] = true
	}
	work := func(id int, until time.Time, patient bool) {
		rng := rand.New(rand.NewPCG(uint64(id), 1))
		for time.Now().Before(until) {
			url := urls[rng.IntN(2)]
			var cl claimed
			claim := map[string]any{"holderId": fmt.Sprintf("h-%d", id), "releaseId": releaseID, "adapterVersion": adapterVersion,
				"modelProfileId": "m", "leaseSeconds": 1}
			code, err := c.call(ctx, "POST", url+"/v1/runs/claim", c.runtime, claim, &cl)
			if err != nil || code == 204 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if code != 200 {
				t.Errorf("claim: %d", code)
				return
			}
			mu.Lock()
			leased[fmt.Sprintf("%s/%d", cl.Run.RunID, cl.Lease.FencingToken)]++
			mu.Unlock()
			if !patient && rng.IntN(4) == 0 {
				time.Sleep(1200 * time.Millisecond) // the lease expires; either replica's reaper takes it back
			}
			// Write through the other replica: the fence holds across processes.
			other := urls[0]
			if url == other {
				other = urls[1]
			}
			attempt := other + "/v1/attempts/" + cl.Attempt.AttemptID.String()
			c.call(ctx, "POST", attempt+"/heartbeat", c.runtime, map[string]any{"fencingToken": cl.Lease.FencingToken}, nil)
			code, err = c.call(ctx, "POST", attempt+"/complete", c.runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "state": "succeeded"}, nil)
			if err == nil && code == 200 {
				mu.Lock()
				completed[cl.Run.RunID]++
				mu.Unlock()
			}
		}
	}
	var wg sync.WaitGroup
	until := time.Now().Add(4 * time.Second)
	for i := range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); work(i, until, false) }()
	}
	wg.Wait()
	// Drain what is left with patient holders.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		left := nRuns - len(completed)
		mu.Unlock()
		if left == 0 || time.Now().After(deadline) {
			break
		}
		work(100, time.Now().Add(500*time.Millisecond), true)
	}
	for key, n := range leased {
		if n > 1 {
			t.Errorf("run/token %s was leased %d times", key, n)
		}
	}
	for id := range enqueued {
		if completed[id] != 1 {
			t.Errorf("run %s took %d completions, want exactly 1", id, completed[id])
		}
	}
	if n, err := disagreements(ctx, db); err != nil || n != 0 {
		t.Errorf("attempts and runs disagree: %d %v", n, err)
	}
	if err := a.Stop(30 * time.Second); err != nil {
		t.Errorf("replica A shutdown: %v", err)
	}
	if err := b.Stop(30 * time.Second); err != nil {
		t.Errorf("replica B shutdown: %v", err)
	}
	t.Logf("%d runs, %d leases, over two replicas", len(enqueued), len(leased))
}
