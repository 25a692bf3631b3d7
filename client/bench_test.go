package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// benchHandlers is how many handlers (worker) or clients (plain) run at once.
const benchHandlers = 16

// BenchmarkRuns measures whole runs (enqueue, claim, three checkpoints, complete) against
// the service in process: through a Worker of 16 handlers, each enqueueing the run that
// follows it, and by 16 plain HTTP clients sending the same requests. `ledger bench
// --workload sdk` measures the same against a real server process.
func BenchmarkRuns(b *testing.B) {
	b.Run("worker", func(b *testing.B) {
		s := newServer(b, app.Config{})
		for range benchHandlers {
			s.enqueue(b, "bench")
		}
		var done atomic.Int64
		finished := make(chan struct{})
		n := int64(b.N)
		cfg := workerConfig("bench")
		cfg.Concurrency, cfg.LeaseSeconds, cfg.HeartbeatEvery = benchHandlers, 3600, 0
		cfg.Logger = slog.New(slog.DiscardHandler)
		cfg.Hooks.Finished = func(r client.Result) {
			if r.Outcome == client.Succeeded && done.Add(1) == n {
				close(finished)
			}
		}
		b.ResetTimer()
		start := time.Now()
		startWorker(b, s.Runtime, cfg, func(ctx context.Context, l *client.Lease) error {
			for i := range 3 {
				if _, err := l.Checkpoint(ctx, client.CheckpointInput{Phase: api.PhaseActing, StateRef: fmt.Sprint("state/", i)}); err != nil {
					return err
				}
			}
			_, err := s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: spec("bench")})
			return err
		})
		<-finished
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
	b.Run("plain", func(b *testing.B) {
		s := newServer(b, app.Config{})
		hc := &http.Client{}
		post := func(path string, body, out any) int {
			raw, _ := json.Marshal(body)
			req, _ := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.RuntimeKey)
			res, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer res.Body.Close()
			if out != nil && res.StatusCode == http.StatusOK {
				_ = json.NewDecoder(res.Body).Decode(out)
			}
			return res.StatusCode
		}
		var left atomic.Int64
		left.Store(int64(b.N))
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for i := range benchHandlers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					post("/v1/runs", api.EnqueueRequest{RunSpec: spec("bench")}, nil)
					var cl api.Claim
					for post("/v1/runs/claim", api.ClaimRequest{HolderID: fmt.Sprint("plain-", i), ReleaseID: testRelease,
						AdapterVersion: testAdapter, ModelProfileID: testModel, LeaseSeconds: api.Ptr(3600)}, &cl) != http.StatusOK {
						time.Sleep(time.Millisecond)
					}
					for seq := range int32(3) {
						post("/v1/attempts/"+cl.Attempt.AttemptID.String()+"/checkpoints", api.CheckpointRequest{
							FencingToken: cl.Lease.FencingToken, Sequence: &seq, Phase: api.Ptr(api.PhaseActing),
							AdapterStateRef: fmt.Sprint("state/", seq), AdapterVersion: testAdapter, Hash: fmt.Sprint("h", seq)}, nil)
					}
					post("/v1/attempts/"+cl.Attempt.AttemptID.String()+"/complete", api.CompleteAttemptRequest{
						FencingToken: cl.Lease.FencingToken, State: api.CompleteSucceeded}, nil)
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
}
