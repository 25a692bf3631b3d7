package runs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The lease's operations as the history records them.
const (
	opClaim    = "claim"
	opWrite    = "write" // a fenced write: here, a heartbeat
	opComplete = "complete"
	opRelease  = "release"
)

// Outcomes of a fenced operation.
const (
	outOK      = "ok"
	outStale   = "stale_lease"
	outExpired = "lease_expired"
	outEnded   = "attempt_ended"
)

type leaseInput struct {
	Op    string
	Run   uuid.UUID
	Token int64
}

type leaseOutput struct {
	Result string
	Token  int64 // a claim's new token
}

// leaseState is the sequential model of one run's lease. Expiry by time and the reaper's
// take-back are not observed operations, so the model allows them at any moment: a claim
// may always take the next epoch, and a write at the current epoch may always find its
// lease expired. What it never allows: an epoch taken twice or out of order, a write
// accepted under any token but the current epoch's, a write accepted after its lease was
// seen expired or given back, and anything accepted after the run ended.
type leaseState struct {
	Epoch   int64
	Leased  bool
	Expired bool
	Ended   bool
}

var leaseModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byRun := map[uuid.UUID][]porcupine.Operation{}
		for _, op := range history {
			r := op.Input.(leaseInput).Run
			byRun[r] = append(byRun[r], op)
		}
		out := make([][]porcupine.Operation, 0, len(byRun))
		for _, ops := range byRun {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return leaseState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(leaseState), input.(leaseInput), output.(leaseOutput)
		switch in.Op {
		case opClaim:
			if s.Ended || out.Token != s.Epoch+1 {
				return false, s
			}
			return true, leaseState{Epoch: out.Token, Leased: true}
		case opWrite, opComplete, opRelease:
			switch out.Result {
			case outStale:
				return in.Token != s.Epoch, s
			case outExpired, outEnded:
				// Both say the lease at the current epoch is no longer the holder's: it
				// passed (lease_expired) or the attempt ended (attempt_ended).
				if in.Token != s.Epoch {
					return false, s
				}
				s.Expired = true
				return true, s
			case outOK:
				if s.Ended || !s.Leased || s.Expired || in.Token != s.Epoch {
					return false, s
				}
				switch in.Op {
				case opComplete:
					s.Ended, s.Leased = true, false
				case opRelease:
					s.Leased, s.Expired = false, true
				}
				return true, s
			}
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(leaseInput), output.(leaseOutput)
		return fmt.Sprintf("%s(%d) -> %s %d", in.Op, in.Token, out.Result, out.Token)
	},
}

// history records operations with their call and return times on one monotonic clock.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, call int64, in leaseInput, out leaseOutput) {
	ret := h.now()
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

func fenceResult(err error) (string, bool) {
	switch {
	case err == nil:
		return outOK, true
	case apperr.Is(err, api.CodeStaleLease):
		return outStale, true
	case apperr.Is(err, api.CodeLeaseExpired):
		return outExpired, true
	case apperr.Is(err, api.CodeAttemptEnded):
		return outEnded, true
	}
	return "", false
}

// TestConcurrentLeaseHistory drives 64 holders against one database with one-second
// leases that expire under them while the reaper runs, records the history of claims,
// fenced writes, completions and releases, and checks it against the sequential lease
// model with porcupine, together with the invariants no history check can see.
func TestConcurrentLeaseHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("concurrency proof: skipped with -short")
	}
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		db := tgt.Open(t, dbtest.Options{})
		cfg := runs.DefaultConfig()
		cfg.PollInterval = 10 * time.Millisecond
		svc := runs.NewService(db, cfg, nil)
		ctx := context.Background()
		tenant := dbtest.NewTenant(t, db)
		caller := runs.Caller{TenantID: tenant, KeyID: "k"}
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, "p1", projects.Change{}); err != nil {
			t.Fatal(err)
		}
		const nRuns = 300
		enqueued := map[uuid.UUID]bool{}
		for i := range nRuns {
			subject := fmt.Sprintf("unique:%d", i)
			if i%6 == 0 {
				subject = fmt.Sprintf("shared:%d", i%10) // queue order under contention
			}
			r, _, err := svc.Enqueue(ctx, caller, spec(subject, func(s *runs.Spec) { s.MaxAttempts = 1000 }))
			if err != nil {
				t.Fatal(err)
			}
			enqueued[r.RunID] = true
		}

		h := &history{start: time.Now()}
		stop := make(chan struct{})
		var bg sync.WaitGroup
		var violations atomic.Int64
		bg.Add(2)
		go func() { // the reaper, much faster than in production
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := svc.Reap(ctx); err != nil {
					t.Errorf("reap: %v", err)
				}
			}
		}()
		go func() { // attempt and run agree at every commit
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(25 * time.Millisecond):
				}
				n, err := svc.TenantDisagreements(ctx, tenant)
				if err != nil {
					t.Errorf("agreement: %v", err)
				}
				violations.Add(int64(n))
			}
		}()

		var completed sync.Map // run -> number of accepted completions
		work := func(client int, until time.Time, rng *rand.Rand) {
			for time.Now().Before(until) {
				call := h.now()
				req := claimReq(fmt.Sprintf("holder-%d", client))
				req.LeaseSeconds = 1
				cl, err := svc.Claim(ctx, caller, req)
				if errors.Is(err, runs.ErrNothingToClaim) {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				run, token, aid := cl.Run.RunID, cl.Lease.FencingToken, cl.Attempt.AttemptID
				h.add(client, call, leaseInput{Op: opClaim, Run: run}, leaseOutput{Result: outOK, Token: token})
				fenced := func(op string, f func() error) {
					call := h.now()
					res, ok := fenceResult(f())
					if !ok {
						t.Errorf("%s: unexpected error", op)
						return
					}
					h.add(client, call, leaseInput{Op: op, Run: run, Token: token}, leaseOutput{Result: res})
					if op == opComplete && res == outOK {
						n, _ := completed.LoadOrStore(run, new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
					}
				}
				for range 1 + rng.IntN(4) {
					if rng.IntN(8) == 0 {
						// Hold on past the lease: the reaper takes it back, another holder
						// may claim it, and this holder's next writes must be refused.
						time.Sleep(1100*time.Millisecond + time.Duration(rng.IntN(200))*time.Millisecond)
					} else {
						time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
					}
					fenced(opWrite, func() error { _, err := svc.Heartbeat(ctx, tenant, aid, token, 0); return err })
				}
				switch p := rng.IntN(10); {
				case p < 7:
					fenced(opComplete, func() error {
						_, err := svc.Complete(ctx, tenant, aid, token, runs.Completion{State: api.AttemptSucceeded})
						return err
					})
				case p < 9:
					zero := time.Duration(0)
					fenced(opRelease, func() error {
						_, err := svc.Release(ctx, tenant, aid, token, runs.Release{RetryAfter: &zero})
						return err
					})
				default: // abandon the lease to the reaper
				}
			}
		}
		var workers sync.WaitGroup
		until := time.Now().Add(3 * time.Second)
		for c := range 64 {
			workers.Add(1)
			go func() {
				defer workers.Done()
				work(c, until, rand.New(rand.NewPCG(uint64(c), 7)))
			}()
		}
		workers.Wait()
		// Drain: one diligent holder finishes whatever is left, waiting out abandoned leases.
		drainUntil := time.Now().Add(30 * time.Second)
		for remaining(t, db, tenant) > 0 && time.Now().Before(drainUntil) {
			call := h.now()
			cl, err := svc.Claim(ctx, caller, claimReq("drain"))
			if errors.Is(err, runs.ErrNothingToClaim) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("drain claim: %v", err)
			}
			h.add(1000, call, leaseInput{Op: opClaim, Run: cl.Run.RunID}, leaseOutput{Result: outOK, Token: cl.Lease.FencingToken})
			call = h.now()
			_, err = svc.Complete(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded})
			res, ok := fenceResult(err)
			if !ok {
				t.Fatalf("drain complete: %v", err)
			}
			h.add(1000, call, leaseInput{Op: opComplete, Run: cl.Run.RunID, Token: cl.Lease.FencingToken}, leaseOutput{Result: res})
			if res == outOK {
				n, _ := completed.LoadOrStore(cl.Run.RunID, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		}
		close(stop)
		bg.Wait()

		if n := violations.Load(); n != 0 {
			t.Errorf("attempts and runs disagreed %d times during the run", n)
		}
		if n := remaining(t, db, tenant); n != 0 {
			t.Errorf("%d runs did not end", n)
		}
		for id := range enqueued {
			r, err := svc.Get(ctx, tenant, id)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := completed.Load(id)
			accepted := int64(0)
			if n != nil {
				accepted = n.(*atomic.Int64).Load()
			}
			if accepted != 1 || r.Outcome == nil || *r.Outcome != api.OutcomeSucceeded {
				t.Errorf("run %s: %d completions accepted, outcome %v; want exactly one", id, accepted, r.Outcome)
			}
		}
		var dupTokens int
		if err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			return tx.GetContext(ctx, &dupTokens, `SELECT COUNT(*) FROM (SELECT RunId, FencingToken FROM ExecutionAttempts
				WHERE TenantId = `+placeholder(db)+` GROUP BY RunId, FencingToken HAVING COUNT(*) > 1) d`, tenant)
		}); err != nil {
			t.Fatal(err)
		}
		if dupTokens != 0 {
			t.Errorf("%d (run, fencing token) pairs were leased more than once", dupTokens)
		}
		stats := map[string]int{}
		for _, op := range h.ops {
			stats[op.Input.(leaseInput).Op+":"+op.Output.(leaseOutput).Result]++
		}
		t.Logf("history: %d operations %v", len(h.ops), stats)
		// The history must exercise the fence, or the check proves nothing.
		if stats[opWrite+":"+outStale]+stats[opComplete+":"+outStale]+stats[opWrite+":"+outExpired]+stats[opWrite+":"+outEnded] == 0 {
			t.Errorf("no fenced write was refused: the run did not exercise the fence")
		}
		res, info := porcupine.CheckOperationsVerbose(leaseModel, h.ops, time.Minute)
		if res != porcupine.Ok {
			t.Errorf("the history is not linearizable against the lease model: %s", res)
			if path := t.TempDir() + "/lease.html"; porcupine.VisualizePath(leaseModel, info, path) == nil {
				t.Logf("visualization: %s", path)
			}
		}
	})
}

func placeholder(db *sqldb.DB) string {
	if db.Dialect.Name() == "sqlserver" {
		return "@p1"
	}
	return "?1"
}

func remaining(t *testing.T, db *sqldb.DB, tenant string) int {
	t.Helper()
	var n int
	err := db.Read(context.Background(), sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		return tx.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM Runs WHERE TenantId = `+placeholder(db)+` AND State <> 2`, tenant)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
