package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// The routes each workload needs (as /openapi.json names them).
var (
	leaseRoutes    = []string{"POST /v1/runs", "POST /v1/runs/claim", "POST /v1/attempts/{attemptId}/complete"}
	appendRoutes   = append(slices.Clone(leaseRoutes), "POST /v1/attempts/{attemptId}/checkpoints", "POST /v1/attempts/{attemptId}/calls")
	cycleRoutes    = append(slices.Clone(leaseRoutes), "POST /v1/attempts/{attemptId}/checkpoints")
	historyRoutes  = append(slices.Clone(appendRoutes), "GET /v1/attempts", "GET /v1/attempts/{attemptId}/timeline")
	depthRoutes    = []string{"POST /v1/runs/claim", "POST /v1/attempts/{attemptId}/complete"}
	subjectCounter atomic.Int64
)

// claimed is what a claim answers (the parts the bench uses).
type claimed struct {
	Attempt struct {
		AttemptID string `json:"attemptId"`
	} `json:"attempt"`
	Lease struct {
		FencingToken int64 `json:"fencingToken"`
	} `json:"lease"`
}

// lease is one client's held attempt and its next sequences.
type lease struct {
	attemptID string
	token     int64
	cp, call  int64
}

// enqueueBody is an enqueue of one run with a unique subject, spread over the projects.
func (b *bencher) enqueueBody() api.EnqueueRequest {
	n := subjectCounter.Add(1)
	band := api.BandBatch
	return api.EnqueueRequest{RunSpec: api.RunSpec{
		Subject: fmt.Sprintf("bench-%s-%d", b.tag, n), Kind: "bench", ProjectID: fmt.Sprintf("p%d", n%benchProjects),
		AgentID: fmt.Sprintf("bench-agent-%d", n%16), StepID: uuid.New(), SnapshotID: uuid.New(), Band: &band,
	}}
}

func (b *bencher) claimBody(t *target, client int, leaseSeconds int) api.ClaimRequest {
	return api.ClaimRequest{HolderID: fmt.Sprintf("bench-%s-%d", b.tag, client), ReleaseID: t.releaseID(),
		AdapterVersion: adapterVersion, ModelProfileID: modelProfile, LeaseSeconds: &leaseSeconds}
}

// checkpointBody is client's checkpoint seq under the lease with token.
func checkpointBody(token, seq int64, client int) api.CheckpointRequest {
	sq, phase := int32(seq), api.PhaseActing
	return api.CheckpointRequest{FencingToken: token, Sequence: &sq, Phase: &phase,
		AdapterStateRef: fmt.Sprintf("bench://state/%d/%d", client, seq), AdapterVersion: adapterVersion,
		Hash: fmt.Sprintf("%016x%016x", token, seq)}
}

// callBody is call record seq under the lease with token.
func callBody(token, seq int64) api.CallRequest {
	sq, kind := int32(seq), api.CallModel
	return api.CallRequest{FencingToken: token, Sequence: &sq, Kind: &kind, Target: "bench-model",
		RequestHash: fmt.Sprintf("%016x%016x", token, seq)}
}

// completeBody completes the attempt under the lease with token, succeeded.
func completeBody(token int64) api.CompleteAttemptRequest {
	return api.CompleteAttemptRequest{FencingToken: token, State: api.CompleteSucceeded}
}

// backoff pauses after a failed request so a failing server is not spun on: longer when
// the server asked the client to come back later.
func backoff(ctx context.Context, a answer) {
	d := 5 * time.Millisecond
	switch a.code {
	case "rate_limited", "database_unavailable", "transport", "timeout", "http_502", "http_503":
		d = 50 * time.Millisecond
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// leaseLost reports whether a failed fenced write means the lease is gone.
func leaseLost(a answer) bool {
	switch a.code {
	case "stale_lease", "lease_expired", "not_found", "illegal_transition":
		return true
	}
	return false
}

// acquire enqueues a run and claims one (untimed setup), until it holds a lease or until
// passes. Failures are counted in rec; a refusal that asking again will not change (a 4xx
// other than 429) ends the attempt.
func (b *bencher) acquire(ctx context.Context, t *target, client int, rec *Recorder, until time.Time) (*lease, bool) {
	for time.Now().Before(until) && ctx.Err() == nil {
		a, err := t.c.do(ctx, http.MethodPost, "/v1/runs", t.keys.runtime, b.enqueueBody(), nil)
		if err != nil {
			return nil, false
		}
		if !a.ok() {
			rec.Record(0, a.code)
			if !transient(a) {
				return nil, false
			}
			backoff(ctx, a)
			continue
		}
		for time.Now().Before(until) && ctx.Err() == nil {
			var cl claimed
			a, err := t.c.do(ctx, http.MethodPost, "/v1/runs/claim", t.keys.runtime, b.claimBody(t, client, 3600), &cl)
			if err != nil {
				return nil, false
			}
			switch {
			case a.ok() && a.status == http.StatusOK:
				return &lease{attemptID: cl.Attempt.AttemptID, token: cl.Lease.FencingToken, cp: 1, call: 1}, true
			case a.ok():
				time.Sleep(5 * time.Millisecond) // 204: another client took the run; one is due again soon
			case transient(a):
				rec.Record(0, a.code)
				backoff(ctx, a)
			default:
				rec.Record(0, a.code)
				return nil, false
			}
		}
	}
	return nil, false
}

// transient reports whether a failure may pass if the request is sent again.
func transient(a answer) bool {
	return a.status == 0 || a.status == http.StatusTooManyRequests || a.status >= 500
}

// acquireAll gives each of n clients a lease, in parallel; clients that get none by the
// start timeout are left out (nil).
func (b *bencher) acquireAll(ctx context.Context, t *target, n int, rec *Recorder) []*lease {
	out := make([]*lease, n)
	until := time.Now().Add(b.cfg.StartTimeout)
	parallel(n, func(i int) { out[i], _ = b.acquire(ctx, t, i, rec, until) })
	return out
}

// release completes the clients' leases (untimed cleanup), so they do not hold the
// tenant's budget or their subjects.
func (b *bencher) release(ctx context.Context, t *target, leases []*lease) {
	ctx = context.WithoutCancel(ctx)
	parallel(len(leases), func(i int) {
		if l := leases[i]; l != nil {
			_, _ = t.c.do(ctx, http.MethodPost, "/v1/attempts/"+l.attemptID+"/complete", t.keys.runtime,
				completeBody(l.token), nil)
		}
	})
}

func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); fn(i) }()
	}
	wg.Wait()
}

func held(leases []*lease) int {
	n := 0
	for _, l := range leases {
		if l != nil {
			n++
		}
	}
	return n
}

// appendLoop appends checkpoints and call records alternately under l until end; each
// request is one operation. A failed write is sent again with the same sequence (an exact
// repeat is idempotent); a lost lease is replaced.
func (b *bencher) appendLoop(ctx context.Context, t *target, client int, l *lease, rec *Recorder, end time.Time) {
	b.pacedAppendLoop(ctx, t, client, l, rec, end, 0)
}

// pacedAppendLoop is appendLoop sending at most one request every interval (0: one after
// another): a client with work of its own, not a flood. A request that takes longer than
// the interval is followed at once.
func (b *bencher) pacedAppendLoop(ctx context.Context, t *target, client int, l *lease, rec *Recorder, end time.Time, every time.Duration) {
	next := time.Now()
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; {
		if every > 0 {
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			next = next.Add(every)
			if now := time.Now(); next.Before(now) {
				next = now
			}
		}
		var a answer
		var ok bool
		if i%2 == 0 {
			a, ok = t.c.timed(ctx, rec, http.MethodPost, "/v1/attempts/"+l.attemptID+"/checkpoints", t.keys.runtime,
				checkpointBody(l.token, l.cp, client), nil)
			if ok {
				l.cp++
			}
		} else {
			a, ok = t.c.timed(ctx, rec, http.MethodPost, "/v1/attempts/"+l.attemptID+"/calls", t.keys.runtime,
				callBody(l.token, l.call), nil)
			if ok {
				l.call++
			}
		}
		if ok {
			i++
			continue
		}
		if a.code == "cancelled" {
			return
		}
		if leaseLost(a) {
			nl, got := b.acquire(ctx, t, client, rec, end)
			if !got {
				return
			}
			*l = *nl
			continue
		}
		backoff(ctx, a)
	}
}

// appendWorkload: each client holds a lease and appends fenced checkpoints and call
// records alternately.
func (b *bencher) appendWorkload(ctx context.Context, t *target) []Result {
	n := b.cfg.clients(Append)
	if miss := t.routes.missing(appendRoutes...); len(miss) > 0 {
		return []Result{unavailable(Append, t.sync, n, miss)}
	}
	b.logf("[%s] append: %d clients take a lease each", t.sync, n)
	rec := NewRecorder()
	leases := b.acquireAll(ctx, t, n, rec)
	end := time.Now().Add(b.cfg.Duration)
	rec.CloseAt(end)
	stop := b.monitor(ctx, t, "append", rec)
	parallel(n, func(i int) {
		if leases[i] != nil {
			b.appendLoop(ctx, t, i, leases[i], rec, end)
		}
	})
	rss := stop()
	b.release(ctx, t, leases)
	row := Result{Workload: Append, Sync: t.sync, Clients: n, RSSMiB: rss}
	b.finishRow(&row, rec, leases)
	return []Result{row}
}

// finishRow fills row from rec and says when clients could not take part, or when every
// operation was a missing route.
func (b *bencher) finishRow(row *Result, rec *Recorder, leases []*lease) {
	h, errs := rec.Snapshot()
	row.fill(h, errs, b.cfg.Duration)
	if leases != nil {
		if k := held(leases); k < len(leases) {
			row.Note = fmt.Sprintf("%d of %d clients got no lease", len(leases)-k, len(leases))
		}
	}
	if row.Ops == 0 {
		if n := errs["not_found"]; n > 0 && len(errs) == 1 {
			row.Status = StatusUnavailable
			row.Note = "every request answered not_found: a route the workload needs is not served"
		} else if len(errs) > 0 {
			row.Status = StatusFailed
			row.Note = "no operation succeeded: " + errorText(errs)
		}
	}
}

// cycleWorkload: enqueue, claim, three checkpoints, complete, again and again.
func (b *bencher) cycleWorkload(ctx context.Context, t *target) []Result {
	n := b.cfg.clients(Cycle)
	if miss := t.routes.missing(cycleRoutes...); len(miss) > 0 {
		return []Result{unavailable(Cycle, t.sync, n, miss)}
	}
	return []Result{b.cycleRow(ctx, t, n, "cycle")}
}

// cycleRow runs cycle's loop on n clients for the window (label names it in the progress
// lines) and returns its row.
func (b *bencher) cycleRow(ctx context.Context, t *target, n int, label string) Result {
	rec := NewRecorder()
	var runs, empty atomic.Int64
	end := time.Now().Add(b.cfg.Duration)
	rec.CloseAt(end)
	stop := b.monitor(ctx, t, label, rec)
	parallel(n, func(i int) {
		for time.Now().Before(end) && ctx.Err() == nil {
			if b.cycleOnce(ctx, t, i, rec, end, &empty) {
				runs.Add(1)
			}
		}
	})
	rss := stop()
	row := Result{Workload: Cycle, Sync: t.sync, Clients: n, RSSMiB: rss}
	b.finishRow(&row, rec, nil)
	row.RunsPerSec = round(float64(runs.Load())/b.cfg.Duration.Seconds(), 1)
	if e := empty.Load(); e > 0 {
		row.Note = joinNote(row.Note, fmt.Sprintf("%d claims answered 204", e))
	}
	return row
}

// cycleOnce is one whole run; it reports whether the run completed inside the window. A
// run still held when the window closes is completed untimed.
func (b *bencher) cycleOnce(ctx context.Context, t *target, client int, rec *Recorder, end time.Time, empty *atomic.Int64) bool {
	if a, ok := t.c.timed(ctx, rec, http.MethodPost, "/v1/runs", t.keys.runtime, b.enqueueBody(), nil); !ok {
		backoff(ctx, a)
		return false
	}
	var l *lease
	for l == nil {
		if !time.Now().Before(end) || ctx.Err() != nil {
			return false
		}
		var cl claimed
		a, ok := t.c.timed(ctx, rec, http.MethodPost, "/v1/runs/claim", t.keys.runtime, b.claimBody(t, client, 3600), &cl)
		switch {
		case ok && a.status == http.StatusOK:
			l = &lease{attemptID: cl.Attempt.AttemptID, token: cl.Lease.FencingToken}
		case ok:
			empty.Add(1)
			time.Sleep(time.Millisecond)
		default:
			backoff(ctx, a)
		}
	}
	completeUntimed := func() {
		_, _ = t.c.do(context.WithoutCancel(ctx), http.MethodPost, "/v1/attempts/"+l.attemptID+"/complete", t.keys.runtime,
			completeBody(l.token), nil)
	}
	for seq := int64(1); seq <= 3; {
		if !time.Now().Before(end) || ctx.Err() != nil {
			completeUntimed()
			return false
		}
		a, ok := t.c.timed(ctx, rec, http.MethodPost, "/v1/attempts/"+l.attemptID+"/checkpoints", t.keys.runtime,
			checkpointBody(l.token, seq, client), nil)
		switch {
		case ok:
			seq++
		case leaseLost(a):
			return false
		default:
			backoff(ctx, a)
		}
	}
	for {
		if !time.Now().Before(end) || ctx.Err() != nil {
			completeUntimed()
			return false
		}
		a, ok := t.c.timed(ctx, rec, http.MethodPost, "/v1/attempts/"+l.attemptID+"/complete", t.keys.runtime,
			completeBody(l.token), nil)
		switch {
		case ok:
			return time.Now().Before(end)
		case leaseLost(a):
			return false
		default:
			backoff(ctx, a)
		}
	}
}

// historyWorkload: half the clients run append while the other half page the attempt list
// and read timelines of attempts they saw, with the admin key.
func (b *bencher) historyWorkload(ctx context.Context, t *target) []Result {
	n := max(b.cfg.clients(History), 2)
	writers := n / 2
	readers := n - writers
	if miss := t.routes.missing(historyRoutes...); len(miss) > 0 {
		return []Result{unavailable(History, t.sync, n, miss)}
	}
	b.logf("[%s] history: %d clients take a lease each, %d read", t.sync, writers, readers)
	recAppend, recList, recTimeline := NewRecorder(), NewRecorder(), NewRecorder()
	leases := b.acquireAll(ctx, t, writers, recAppend)
	end := time.Now().Add(b.cfg.Duration)
	for _, r := range []*Recorder{recAppend, recList, recTimeline} {
		r.CloseAt(end)
	}
	stop := b.monitor(ctx, t, "history", recAppend, recList, recTimeline)
	parallel(n, func(i int) {
		if i < writers {
			if leases[i] != nil {
				b.appendLoop(ctx, t, i, leases[i], recAppend, end)
			}
			return
		}
		b.readLoop(ctx, t, recList, recTimeline, end, uint64(i))
	})
	rss := stop()
	b.release(ctx, t, leases)
	rows := []Result{
		{Workload: History, Part: "list", Sync: t.sync, Clients: readers, RSSMiB: rss, WorkloadClients: n},
		{Workload: History, Part: "timeline", Sync: t.sync, Clients: readers, RSSMiB: rss, WorkloadClients: n},
		{Workload: History, Part: "append", Sync: t.sync, Clients: writers, RSSMiB: rss, WorkloadClients: n},
	}
	b.finishRow(&rows[0], recList, nil)
	b.finishRow(&rows[1], recTimeline, nil)
	b.finishRow(&rows[2], recAppend, leases)
	return rows
}

// readLoop pages GET /v1/attempts (walking nextCursor, starting again after the last
// page), and after each page reads the timeline of an attempt it has seen.
func (b *bencher) readLoop(ctx context.Context, t *target, recList, recTimeline *Recorder, end time.Time, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	const keep = 256
	seen := make([]string, 0, keep)
	next := 0
	cursor := ""
	for time.Now().Before(end) && ctx.Err() == nil {
		path := "/v1/attempts?limit=50"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Items []struct {
				AttemptID string `json:"attemptId"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		a, ok := t.c.timed(ctx, recList, http.MethodGet, path, t.keys.admin, nil, &page)
		if !ok {
			if a.code == "cancelled" {
				return
			}
			cursor = ""
			backoff(ctx, a)
			continue
		}
		for _, it := range page.Items {
			if len(seen) < keep {
				seen = append(seen, it.AttemptID)
			} else {
				seen[next%keep] = it.AttemptID
				next++
			}
		}
		cursor = page.NextCursor
		if len(seen) == 0 || !time.Now().Before(end) {
			continue
		}
		id := seen[rnd.IntN(len(seen))]
		if a, ok := t.c.timed(ctx, recTimeline, http.MethodGet, "/v1/attempts/"+id+"/timeline", t.keys.admin, nil, nil); !ok {
			backoff(ctx, a)
		}
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
