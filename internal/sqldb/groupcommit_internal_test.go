package sqldb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// queued returns a committer that runs nothing, with jobs waiting per tenant in the order
// given (tenant "b" × 3 means three of b's).
func queued(t *testing.T, tenants ...string) *committer {
	t.Helper()
	c := &committer{queues: map[string][]*job{}}
	for _, tenant := range tenants {
		if len(c.queues[tenant]) == 0 {
			c.turn = append(c.turn, tenant)
		}
		c.queues[tenant] = append(c.queues[tenant], &job{ctx: context.Background(), tenant: tenant, done: make(chan struct{})})
	}
	return c
}

func tenantsOf(batch []*job) map[string]int {
	n := map[string]int{}
	for _, j := range batch {
		n[j.tenant]++
	}
	return n
}

func repeat(tenant string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = tenant
	}
	return out
}

// TestGroupTakesTenantsInTurn: a tenant alone fills groups up to maxGroup; while another
// tenant waits, a flooding tenant puts at most sharedTurns jobs in a group and the other
// tenant's job is in it, whatever the order of arrival.
func TestGroupTakesTenantsInTurn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		waiting []string
		want    []map[string]int // the groups, in order
	}{
		{"AloneUpToMaxGroup", repeat("b", maxGroup+5), []map[string]int{{"b": maxGroup}, {"b": 5}}},
		{"FloodThenOther", append(repeat("b", 3*sharedTurns), "a"),
			[]map[string]int{{"a": 1, "b": sharedTurns}, {"b": 2 * sharedTurns}}},
		{"TwoFloods", append(repeat("b", 2*sharedTurns), repeat("a", 2*sharedTurns)...),
			[]map[string]int{{"a": sharedTurns, "b": sharedTurns}, {"a": sharedTurns, "b": sharedTurns}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := queued(t, tc.waiting...)
			for i, want := range tc.want {
				got := tenantsOf(c.take())
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("group %d: %v, want %v", i, got, want)
				}
			}
			if rest := c.take(); len(rest) != 0 || len(c.turn) != 0 || len(c.queues) != 0 {
				t.Fatalf("left %d jobs, turn %v, queues %v", len(rest), c.turn, c.queues)
			}
		})
	}
}

// TestGroupTurnRotates: with more tenants waiting than a group serves in full, the tenant
// served first moves behind the others, so each tenant is first in turn.
func TestGroupTurnRotates(t *testing.T) {
	t.Parallel()
	c := queued(t, append(append(repeat("a", 3*sharedTurns), repeat("b", 3*sharedTurns)...), repeat("c", 3*sharedTurns)...)...)
	var firsts []string
	for range 3 {
		firsts = append(firsts, c.turn[0])
		if got := tenantsOf(c.take()); got["a"] != sharedTurns || got["b"] != sharedTurns || got["c"] != sharedTurns {
			t.Fatalf("group %v, want %d of each", got, sharedTurns)
		}
	}
	if fmt.Sprint(firsts) != "[a b c]" {
		t.Fatalf("first in turn: %v, want [a b c]", firsts)
	}
}

// TestGroupCancelledWaiterLeavesItsQueue: a caller that gives up before its job is taken
// leaves no job and no turn behind.
func TestGroupCancelledWaiterLeavesItsQueue(t *testing.T) {
	t.Parallel()
	c := queued(t, "a", "b")
	c.remove(c.queues["a"][0])
	if fmt.Sprint(c.turn) != "[b]" || len(c.queues["a"]) != 0 {
		t.Fatalf("turn %v, queues %v", c.turn, c.queues)
	}
	if got := tenantsOf(c.take()); fmt.Sprint(got) != "map[b:1]" {
		t.Fatalf("group %v, want b's job only", got)
	}
}

// TestCheckpointsRunInTheBackground: the writer leaves the log to the background
// checkpointer below walRestartPages, and the checkpointer copies all of it after commits.
func TestCheckpointsRunInTheBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var auto int
	if err := db.w.GetContext(ctx, &auto, "PRAGMA wal_autocheckpoint"); err != nil || auto != walRestartPages {
		t.Fatalf("writer's wal_autocheckpoint %d (%v), want %d", auto, err, walRestartPages)
	}
	var limit int64
	if err := db.w.GetContext(ctx, &limit, "PRAGMA journal_size_limit"); err != nil || limit != walSizeLimit {
		t.Fatalf("writer's journal_size_limit %d (%v), want %d", limit, err, walSizeLimit)
	}
	type run struct{ logPages, copied int }
	runs := make(chan run, 100)
	db.ckpt.ran = func(logPages, copied int) { runs <- run{logPages, copied} }
	if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE t (x INTEGER)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A bound on waiting, not on speed: without a background checkpoint, none comes.
	bound := time.After(time.Minute)
	for {
		select {
		case r := <-runs:
			if r.logPages > 0 && r.copied == r.logPages {
				return // the commit's pages are in the database file
			}
		case <-bound:
			t.Fatal("no background checkpoint copied the commit")
		}
	}
}

// TestGroupServesEveryTenantWithinTwoGroups: with more tenants waiting than a group holds
// (maxGroup), the tenants a group left out go into the next one (a rotation by one tenant
// made the one behind the first maxGroup wait tenants-maxGroup groups).
func TestGroupServesEveryTenantWithinTwoGroups(t *testing.T) {
	t.Parallel()
	var order []string
	const tenants = 200
	for i := range tenants {
		for range 3 {
			order = append(order, fmt.Sprintf("t%03d", i))
		}
	}
	c := queued(t, order...)
	first := tenantsOf(c.take())
	second := tenantsOf(c.take())
	for i := range tenants {
		name := fmt.Sprintf("t%03d", i)
		if first[name] == 0 && second[name] == 0 {
			t.Fatalf("%s waited through two groups while %d tenants were served in both (first %d, second %d tenants)",
				name, overlap(first, second), len(first), len(second))
		}
	}
}

func overlap(a, b map[string]int) int {
	n := 0
	for k := range a {
		if b[k] > 0 {
			n++
		}
	}
	return n
}

// panicky is an observer whose GroupCommitted panics while armed.
type panicky struct{ armed atomic.Bool }

func (*panicky) WriteDone(time.Duration) {}
func (*panicky) ConnectionOpened()       {}
func (*panicky) GroupRerun()             {}
func (p *panicky) GroupCommitted(int) {
	if p.armed.Swap(false) {
		panic("injected: observer")
	}
}

// TestWriterSurvivesAPanicOutsideItsJobs is issue 17 item 14, by fault injection: a panic
// beginning a group fails that group's writes (a 500, nothing written) and the writer goes
// on; a panic in the observer after the commit leaves the committed write a success; and a
// writer that panics group after group gives up: every write and readiness fail with
// ErrWriterBroken (503), and Fatal tells the process to exit.
func TestWriterSurvivesAPanicOutsideItsJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openLogged(t, filepath.Join(t.TempDir(), "ledger.db"))
	insert := func(x int) error { return insertRow(db, x) }
	count := func() int {
		var n int
		if err := db.Raw().GetContext(ctx, &n, "SELECT COUNT(*) FROM t"); err != nil {
			t.Fatal(err)
		}
		return n
	}
	c := db.group
	begin := c.begin
	var failBegins atomic.Int32
	c.begin = func(ctx context.Context) (*ownConn, error) {
		if failBegins.Add(-1) >= 0 {
			panic("injected: begin")
		}
		return begin(ctx)
	}

	failBegins.Store(1)
	if err := insert(1); !errors.Is(err, errGroupPanic) {
		t.Fatalf("a write whose group panicked beginning: %v, want errGroupPanic", err)
	}
	if err := insert(2); err != nil {
		t.Fatalf("the write after the panic: %v", err)
	}
	obs := &panicky{}
	db.SetObserver(obs)
	obs.armed.Store(true)
	if err := insert(3); err != nil {
		t.Fatalf("a committed write whose observer panicked: %v, want success", err)
	}
	if err := insert(4); err != nil {
		t.Fatalf("the write after the observer's panic: %v", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d rows, want 3 (the write that failed wrote nothing)", n)
	}
	select {
	case <-db.Fatal():
		t.Fatal("the writer gave up after isolated panics")
	default:
	}

	failBegins.Store(1 << 20)
	for i := range maxGroupPanics {
		if err := insert(10 + i); !errors.Is(err, errGroupPanic) {
			t.Fatalf("write %d while every group panics: %v", i, err)
		}
	}
	select {
	case <-db.Fatal():
	case <-time.After(5 * time.Second):
		t.Fatal("Fatal not closed after repeated panics")
	}
	if err := insert(99); !errors.Is(err, ErrWriterBroken) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a write once the writer gave up: %v, want ErrWriterBroken", err)
	}
	if err := db.Probe(ctx); !errors.Is(err, ErrWriterBroken) {
		t.Fatalf("readiness once the writer gave up: %v", err)
	}
}
