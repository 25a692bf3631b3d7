package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// tenantClient speaks for one tenant from any goroutine: it reports failures as values,
// never through t.
type tenantClient struct {
	s              *stack
	admin, runtime string
	project        string
	release        string
}

type answer struct {
	status     int
	code       string
	retryAfter string
	body       []byte
}

func (c *tenantClient) send(ctx context.Context, method, path, key, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.s.srv.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	res, err := c.s.srv.Client().Do(hr)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: b}
	if res.StatusCode >= 400 {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(b, &p)
		a.code = p.Code
	}
	return a, nil
}

// setup makes the tenant's project and active release.
func (c *tenantClient) setup(t *testing.T) {
	t.Helper()
	refs := `["noisy://adapter"]`
	sum := sha256.Sum256([]byte(refs))
	for _, r := range []struct{ path, key, body string }{
		{"/v1/projects/" + c.project, c.admin, `{}`},
		{"/v1/releases/" + c.release + "/adapters/1", c.runtime,
			`{"manifestHash":"` + hex.EncodeToString(sum[:]) + `","contentRefs":` + refs + `,"state":"active"}`},
	} {
		a, err := c.send(context.Background(), http.MethodPut, r.path, r.key, r.body)
		if err != nil || a.status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s %v", r.path, a.status, a.body, err)
		}
	}
}

func (c *tenantClient) enqueueBody() string {
	return fmt.Sprintf(`{"subject":%q,"kind":"noisy","projectId":%q,"agentId":"agent","stepId":%q,"snapshotId":%q}`,
		"s-"+uuid.NewString(), c.project, uuid.NewString(), uuid.NewString())
}

func (c *tenantClient) claimBody(holder string, wait int) string {
	return fmt.Sprintf(`{"holderId":%q,"releaseId":%q,"adapterVersion":"1","modelProfileId":"m","leaseSeconds":3600,"waitSeconds":%d}`,
		holder, c.release, wait)
}

type claimedRun struct {
	Attempt struct {
		AttemptID string `json:"attemptId"`
	} `json:"attempt"`
	Lease struct {
		FencingToken int64 `json:"fencingToken"`
	} `json:"lease"`
}

func checkpointBody(token, seq int64) string {
	return fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"phase":"acting","adapterStateRef":"s://%d","adapterVersion":"1","hash":"h%d"}`,
		token, seq, seq, seq)
}

// TestNoisyNeighbourLeavesOtherTenantAlone floods the service from tenant B with long-poll
// claims and fenced appends until B is held at its caps (its long polls past the cap answered
// 204 with Retry-After at once, its other requests past its share answered 429), then has
// tenant A run whole runs: every one of A's requests succeeds, none is 429. The server-wide
// cap is above one tenant's share, so B cannot fill it, and the replica works on three
// requests at once, the tenants with requests waiting served in turn.
func TestNoisyNeighbourLeavesOtherTenantAlone(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{KeyCacheTTL: tenancy.DefaultKeyCacheTTL,
		Limits: admission.Limits{ReplicaInFlight: 12, ReplicaActive: 3, InFlight: 6, LongPolls: 3}})
	_, adminA, rtA := s.tenantKeys(t)
	_, adminB, rtB := s.tenantKeys(t)
	a := &tenantClient{s: s, admin: adminA, runtime: rtA, project: "pa", release: "ra"}
	b := &tenantClient{s: s, admin: adminB, runtime: rtB, project: "pb", release: "rb"}
	a.setup(t)
	b.setup(t)

	// B's appenders take their leases first, so B's long polls find nothing and wait.
	const appenders, pollers = 4, 12
	leases := make([]claimedRun, appenders)
	for i := range leases {
		if r, err := b.send(context.Background(), http.MethodPost, "/v1/runs", rtB, b.enqueueBody()); err != nil || r.status != http.StatusCreated {
			t.Fatalf("B enqueue: %d %s %v", r.status, r.body, err)
		}
		r, err := b.send(context.Background(), http.MethodPost, "/v1/runs/claim", rtB, b.claimBody(fmt.Sprint("b", i), 0))
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("B claim: %d %s %v", r.status, r.body, err)
		}
		if err := json.Unmarshal(r.body, &leases[i]); err != nil {
			t.Fatal(err)
		}
	}

	flood, stopFlood := context.WithCancel(context.Background())
	var (
		wg                     sync.WaitGroup
		bPollRefused, bLimited atomic.Int64
		bUnexpected            = make(chan string, 100)
		atCaps                 = make(chan struct{})
		atCapsOnce             sync.Once
	)
	note := func() {
		if bPollRefused.Load() > 0 || bLimited.Load() > 0 {
			atCapsOnce.Do(func() { close(atCaps) })
		}
	}
	unexpected := func(what string, r answer) {
		select {
		case bUnexpected <- fmt.Sprintf("%s: %d %s", what, r.status, r.body):
		default:
		}
	}
	for i := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for flood.Err() == nil {
				r, err := b.send(flood, http.MethodPost, "/v1/runs/claim", rtB, b.claimBody(fmt.Sprint("bp", i), 30))
				switch {
				case err != nil:
				case r.status == http.StatusNoContent && r.retryAfter != "":
					bPollRefused.Add(1)
				case r.status == http.StatusTooManyRequests && r.code == "rate_limited" && r.retryAfter != "":
					bLimited.Add(1)
				case r.status == http.StatusNoContent:
					// a wait that ran out
				default:
					unexpected("B long poll", r)
				}
				note()
			}
		}()
	}
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(1); flood.Err() == nil; {
				r, err := b.send(flood, http.MethodPost, "/v1/attempts/"+l.Attempt.AttemptID+"/checkpoints", rtB, checkpointBody(l.Lease.FencingToken, seq))
				switch {
				case err != nil:
				case r.status == http.StatusCreated:
					seq++
				case r.status == http.StatusTooManyRequests && r.code == "rate_limited" && r.retryAfter != "":
					bLimited.Add(1)
				default:
					unexpected(fmt.Sprint("B appender ", i), r)
				}
				note()
			}
		}()
	}
	t.Cleanup(func() { stopFlood(); wg.Wait() })
	<-atCaps

	// B has been refused: it is at a cap. A runs whole runs from three clients while B keeps
	// flooding.
	const clients, runsEach = 3, 10
	aFailures := make(chan string, clients*runsEach*6)
	var aOK atomic.Int64
	var awg sync.WaitGroup
	for c := range clients {
		awg.Add(1)
		go func() {
			defer awg.Done()
			ctx := context.Background()
			expect := func(what string, r answer, err error, status int) bool {
				if err != nil || r.status != status {
					aFailures <- fmt.Sprintf("A %s: %d %s %v", what, r.status, r.body, err)
					return false
				}
				aOK.Add(1)
				return true
			}
			for range runsEach {
				r, err := a.send(ctx, http.MethodPost, "/v1/runs", rtA, a.enqueueBody())
				if !expect("enqueue", r, err, http.StatusCreated) {
					return
				}
				r, err = a.send(ctx, http.MethodPost, "/v1/runs/claim", rtA, a.claimBody(fmt.Sprint("a", c), 5))
				if !expect("claim", r, err, http.StatusOK) {
					return
				}
				var cl claimedRun
				if err := json.Unmarshal(r.body, &cl); err != nil {
					aFailures <- err.Error()
					return
				}
				for seq := int64(1); seq <= 2; seq++ {
					r, err = a.send(ctx, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/checkpoints", rtA, checkpointBody(cl.Lease.FencingToken, seq))
					if !expect("checkpoint", r, err, http.StatusCreated) {
						return
					}
				}
				r, err = a.send(ctx, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/complete", rtA,
					fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, cl.Lease.FencingToken))
				if !expect("complete", r, err, http.StatusOK) {
					return
				}
				r, err = a.send(ctx, http.MethodGet, "/v1/projects/"+a.project, adminA, "")
				if !expect("read", r, err, http.StatusOK) {
					return
				}
			}
		}()
	}
	awg.Wait()
	refusedDuringA, limitedDuringA := bPollRefused.Load(), bLimited.Load()
	stopFlood()
	wg.Wait()
	close(aFailures)
	for f := range aFailures {
		t.Error(f)
	}
	if got := aOK.Load(); got != clients*runsEach*6 && !t.Failed() {
		t.Fatalf("A made %d successful requests, want %d", got, clients*runsEach*6)
	}
	close(bUnexpected)
	for u := range bUnexpected {
		t.Errorf("unexpected answer to B: %s", u)
	}
	if refusedDuringA == 0 || limitedDuringA == 0 {
		t.Errorf("B was not held at both caps (%d long polls refused, %d requests limited): the test proves nothing",
			refusedDuringA, limitedDuringA)
	}
	t.Logf("B: %d long polls refused at once, %d requests over its share refused (by the end of A's runs)", refusedDuringA, limitedDuringA)
}
