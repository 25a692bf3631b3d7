package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// script is a test server that answers each request with the next of its steps, and counts
// the requests.
type script struct {
	mu    sync.Mutex
	steps []func(w http.ResponseWriter, r *http.Request)
	seen  []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI())
	var step func(http.ResponseWriter, *http.Request)
	if len(s.steps) > 0 {
		step, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	if step == nil {
		http.Error(w, "script ran out", http.StatusTeapot)
		return
	}
	step(w, r)
}

func (s *script) tries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// problem answers a problem document.
func problem(status int, code api.ProblemCode, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"type":"urn:ledger:problem:` + string(code) + `","title":"x","status":` +
			strconv.Itoa(status) + `,"code":"` + string(code) + `","detail":"scripted"}`))
	}
}

// answer answers status with a JSON body.
func answer(status int, body string, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// hangUp reads the request and closes the connection without answering: the request
// reached the server, the answer was lost.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// scripted is a client of a scripted server whose waits are recorded instead of slept.
func scripted(t *testing.T, steps ...func(http.ResponseWriter, *http.Request)) (*client.Client, *script, *[]time.Duration) {
	t.Helper()
	sc := &script{steps: steps}
	hs := httptest.NewServer(sc)
	t.Cleanup(hs.Close)
	c, err := client.New(client.WithBaseURL(hs.URL), client.WithKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	})
	return c, sc, &waits
}

const runJSON = `{"runId":"6f1c2b9e-3d4a-4c5b-9e8f-1a2b3c4d5e6f","state":"queued","band":"batch"}`

// Each call is retried as its repeat safety allows: every call after a 429 or when no
// connection was made; only calls safe to repeat after a 503 or a lost answer.
func TestRetriesFollowRepeatSafety(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	id := uuid.New()
	enqueue := func(key *string) func(c *client.Client) error {
		return func(c *client.Client) error {
			sp := spec("k")
			sp.IdempotencyKey = key
			_, err := c.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp})
			return err
		}
	}
	getRun := func(c *client.Client) error { _, err := c.GetRun(ctx, id); return err }
	claim := func(c *client.Client) error {
		_, err := c.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
		return err
	}
	decide := func(c *client.Client) error {
		_, err := c.RequestDecision(ctx, id, api.DecisionRequest{FencingToken: 1, Kind: api.Ptr(api.DecisionApproval)})
		return err
	}
	checkpoint := func(c *client.Client) error {
		_, err := c.AppendCheckpoint(ctx, id, api.CheckpointRequest{FencingToken: 1, Sequence: api.Ptr(int32(0)),
			Phase: api.Ptr(api.PhaseActing), AdapterStateRef: "s", AdapterVersion: "1", Hash: "h"})
		return err
	}
	correct := func(c *client.Client) error {
		_, err := c.PatchAttempt(ctx, id, api.PatchAttemptRequest{FencingToken: 1, Correction: true})
		return err
	}
	setPhase := func(c *client.Client) error {
		_, err := c.PatchAttempt(ctx, id, api.PatchAttemptRequest{FencingToken: 1, Phase: api.Ptr(api.PhaseActing)})
		return err
	}
	unavailable := problem(http.StatusServiceUnavailable, api.CodeDatabaseUnavailable, "Retry-After", "2")
	limited := problem(http.StatusTooManyRequests, api.CodeRateLimited, "Retry-After", "1")
	cases := []struct {
		name   string
		call   func(*client.Client) error
		first  func(http.ResponseWriter, *http.Request)
		second func(http.ResponseWriter, *http.Request)
		tries  int
		want   error
	}{
		{"ReadAfter503", getRun, unavailable, answer(200, runJSON), 2, nil},
		{"ReadAfterLostAnswer", getRun, hangUp, answer(200, runJSON), 2, nil},
		{"EnqueueWithKeyAfter503", enqueue(api.Ptr("key")), unavailable, answer(200, runJSON), 2, nil},
		{"EnqueueWithoutKeyNotAfter503", enqueue(nil), unavailable, nil, 1, client.ErrDatabaseUnavailable},
		{"EnqueueWithoutKeyNotAfterLostAnswer", enqueue(nil), hangUp, nil, 1, nil},
		{"EnqueueWithoutKeyAfter429", enqueue(nil), limited, answer(201, runJSON), 2, nil},
		{"ClaimNotAfter503", claim, unavailable, nil, 1, client.ErrDatabaseUnavailable},
		{"ClaimNotAfterLostAnswer", claim, hangUp, nil, 1, nil},
		{"ClaimAfter429", claim, limited, answer(204, ""), 2, nil},
		{"DecisionNotAfterLostAnswer", decide, hangUp, nil, 1, nil},
		{"CheckpointAfterLostAnswer", checkpoint, hangUp, answer(200, `{}`), 2, nil},
		{"CorrectionNotAfterLostAnswer", correct, hangUp, nil, 1, nil},
		{"PhaseAfterLostAnswer", setPhase, hangUp, answer(200, `{}`), 2, nil},
		{"NoRetryOnConflict", checkpoint, problem(409, api.CodeStaleLease), nil, 1, client.ErrStaleLease},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, sc, _ := scripted(t, tc.first, tc.second)
			err := tc.call(c)
			if got := sc.tries(); got != tc.tries {
				t.Fatalf("%d tries, want %d (err %v)", got, tc.tries, err)
			}
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err %v, want %v", err, tc.want)
			case tc.want == nil && tc.tries == 2 && err != nil:
				t.Fatalf("err %v", err)
			case tc.want == nil && tc.tries == 1:
				var te *client.TransportError
				if !errors.As(err, &te) {
					t.Fatalf("err %v, want a transport error", err)
				}
			}
		})
	}
}

// A call whose connection could not be made is retried even when it is not safe to repeat:
// nothing reached a server.
func TestRefusedConnectionIsRetriedForAnyCall(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New(client.WithBaseURL("http://"+addr), client.WithRetry(client.RetryPolicy{MaxAttempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var waits int
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error { waits++; return nil })
	_, err = c.ClaimRun(context.Background(), api.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
	var te *client.TransportError
	if !errors.As(err, &te) || waits != 2 {
		t.Fatalf("err %v after %d waits, want a transport error after 2", err, waits)
	}
}

// Retry-After is the least wait; a longer one than the policy allows is not waited for.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	c, sc, waits := scripted(t,
		problem(http.StatusTooManyRequests, api.CodeRateLimited, "Retry-After", "7"),
		problem(http.StatusServiceUnavailable, api.CodeDatabaseUnavailable),
		answer(200, runJSON))
	if _, err := c.GetRun(context.Background(), uuid.New()); err != nil {
		t.Fatal(err)
	}
	if sc.tries() != 3 || len(*waits) != 2 {
		t.Fatalf("%d tries, waits %v", sc.tries(), *waits)
	}
	if w := (*waits)[0]; w < 7*time.Second || w > 7*time.Second*5/4 {
		t.Fatalf("waited %s after Retry-After: 7", w)
	}

	c, sc, _ = scripted(t, problem(http.StatusTooManyRequests, api.CodeRateLimited, "Retry-After", "3600"))
	_, err := c.GetRun(context.Background(), uuid.New())
	var p *client.Problem
	if !errors.As(err, &p) || p.RetryAfter != time.Hour || sc.tries() != 1 {
		t.Fatalf("err %v after %d tries", err, sc.tries())
	}
}

// A retried If-Match update refused after an earlier try may have applied says so.
func TestRetriedConditionalUpdateReportsMaybeApplied(t *testing.T) {
	t.Parallel()
	c, sc, _ := scripted(t, hangUp, problem(http.StatusPreconditionFailed, api.CodePreconditionFailed))
	_, err := c.AnswerDecision(context.Background(), uuid.New(), `"0000000000000001"`, api.AnswerDecisionRequest{Status: api.AnswerApproved})
	if !errors.Is(err, client.ErrMaybeApplied) || !errors.Is(err, client.ErrPreconditionFailed) || sc.tries() != 2 {
		t.Fatalf("err %v after %d tries", err, sc.tries())
	}
	// Refused at the first try, it is a plain 412.
	c, _, _ = scripted(t, problem(http.StatusPreconditionFailed, api.CodePreconditionFailed))
	_, err = c.AnswerDecision(context.Background(), uuid.New(), `"0000000000000001"`, api.AnswerDecisionRequest{Status: api.AnswerApproved})
	if errors.Is(err, client.ErrMaybeApplied) || !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("err %v", err)
	}
	// After a 429 nothing applied: a 412 then is the caller's stale ETag.
	c, _, _ = scripted(t, problem(http.StatusTooManyRequests, api.CodeRateLimited, "Retry-After", "1"),
		problem(http.StatusPreconditionFailed, api.CodePreconditionFailed))
	_, _, err = c.PutProject(context.Background(), "p", api.PutProjectRequest{}, `"0000000000000001"`)
	if errors.Is(err, client.ErrMaybeApplied) || !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("err %v", err)
	}
}

// A 429 from the real service's per-tenant rate limit is waited out and the call succeeds.
func TestRateLimitedCallsAreRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{Limits: admission.Limits{Rate: 1, Burst: 1}})
	c := s.client(t, s.RuntimeKey)
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return client.Sleep(ctx, d)
	})
	run := s.enqueue(t, "limited") // through s.Runtime, which shares the tenant's rate
	for range 3 {
		if _, err := c.GetRun(context.Background(), run.RunID); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 || !slices.ContainsFunc(waits, func(d time.Duration) bool { return d >= time.Second }) {
		t.Fatalf("waits %v: want at least one of the service's Retry-After (1s)", waits)
	}
}
