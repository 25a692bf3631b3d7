package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// retryTable is api/retry.json, the one retry table of the three SDKs.
type retryTable struct {
	Policy struct {
		MaxAttempts      int     `json:"maxAttempts"`
		BaseMs           int     `json:"baseMs"`
		MaxMs            int     `json:"maxMs"`
		MaxRetryAfterMs  int     `json:"maxRetryAfterMs"`
		RetryAfterJitter float64 `json:"retryAfterJitter"`
	} `json:"policy"`
	RepeatClasses map[string]string `json:"repeatClasses"`
	Failures      map[string]string `json:"failures"`
	Operations    map[string]struct {
		Repeat      string            `json:"repeat"`
		WhenBody    map[string]string `json:"whenBody"`
		WhenIfMatch string            `json:"whenIfMatch"`
		Ambiguous   []string          `json:"ambiguous"`
	} `json:"operations"`
}

func readRetryTable(t *testing.T) retryTable {
	t.Helper()
	b, err := os.ReadFile("../api/retry.json")
	if err != nil {
		t.Fatal(err)
	}
	var rt retryTable
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// class is the repeat class the table gives a call of op, with the body member whenBody
// names set (bodySet) and If-Match sent (ifMatch).
func (rt retryTable) class(op string, bodySet, ifMatch bool) string {
	e := rt.Operations[op]
	c := e.Repeat
	if bodySet {
		for _, v := range e.WhenBody {
			c = v
		}
	}
	if ifMatch && e.WhenIfMatch != "" {
		c = e.WhenIfMatch
	}
	return c
}

// retries says whether the table sends a call of class again after a failure of kind.
func (rt retryTable) retries(t *testing.T, kind, class string) bool {
	t.Helper()
	switch rt.Failures[kind] {
	case "always":
		return true
	case "unlessOnce":
		return class != "once"
	case "never":
		return false
	}
	t.Fatalf("failure class %s: rule %q", kind, rt.Failures[kind])
	return false
}

// variant is one way the Go SDK sends an operation.
type variant struct {
	name string
	// bodySet: the request body has the member the operation's whenBody names; ifMatch: the
	// call sends If-Match.
	bodySet, ifMatch bool
	call             func(ctx context.Context, c *client.Client) error
	// ok is the successful answer (default 200 {}); noBody: the SDK reads no body of it.
	ok     func(http.ResponseWriter, *http.Request)
	noBody bool
}

// notInSDK are the operations the Go SDK deliberately has no call of, with the reason.
var notInSDK = map[string]string{
	"getMetrics": "Prometheus text for a scraper, not for a runtime; the OpenAPI document describes it",
}

func codesOf(codes []string) []api.ProblemCode {
	out := make([]api.ProblemCode, 0, len(codes))
	for _, c := range codes {
		out = append(out, api.ProblemCode(c))
	}
	return out
}

// goCalls are the Go SDK's calls of every operation of the table but notInSDK's.
func goCalls() map[string][]variant {
	id := uuid.New()
	fenced := api.FencedRequest{FencingToken: 1}
	page := answer(200, `{"items":[]}`)
	spec := func(key *string) api.RunSpec {
		return api.RunSpec{Subject: "s", Kind: "k", ProjectID: "p", AgentID: "a", StepID: id, SnapshotID: id, IdempotencyKey: key}
	}
	one := func(name string, call func(ctx context.Context, c *client.Client) error) []variant {
		return []variant{{name: name, call: call}}
	}
	e := func(_ any, err error) error { return err }
	e3 := func(_, _ any, err error) error { return err }
	return map[string][]variant{
		"acknowledgeCancellation": one("ObserveCancellation", func(ctx context.Context, c *client.Client) error {
			return e(c.ObserveCancellation(ctx, id, fenced))
		}),
		"acquireTaskLock": one("AcquireLock", func(ctx context.Context, c *client.Client) error {
			return e(c.AcquireLock(ctx, "a", "t", api.LockRequest{HolderID: "h", TTLSeconds: 5}))
		}),
		"answerDecision": {{name: "AnswerDecision", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
			return e(c.AnswerDecision(ctx, id, `"1"`, api.AnswerDecisionRequest{Status: api.AnswerApproved}))
		}}},
		"appendCheckpoint": one("AppendCheckpoint", func(ctx context.Context, c *client.Client) error {
			return e(c.AppendCheckpoint(ctx, id, api.CheckpointRequest{FencingToken: 1, Sequence: api.Ptr(int32(0)),
				Phase: api.Ptr(api.PhaseActing), AdapterStateRef: "s", AdapterVersion: "1", Hash: "h"}))
		}),
		"cancelRun": one("CancelRun", func(ctx context.Context, c *client.Client) error { return e(c.CancelRun(ctx, id)) }),
		"claimRun": {{name: "ClaimRun", ok: answer(204, ""), call: func(ctx context.Context, c *client.Client) error {
			return e(c.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"}))
		}}},
		"completeAttempt": one("CompleteAttempt", func(ctx context.Context, c *client.Client) error {
			return e(c.CompleteAttempt(ctx, id, api.CompleteAttemptRequest{FencingToken: 1, State: api.CompleteSucceeded}))
		}),
		"continueRun": one("ContinueRun", func(ctx context.Context, c *client.Client) error { return e(c.ContinueRun(ctx, id, nil)) }),
		"createDelegation": {
			{name: "Delegate", call: func(ctx context.Context, c *client.Client) error {
				return e(c.Delegate(ctx, id, api.DelegationRequest{FencingToken: 1, Purpose: "p", Child: spec(nil)}))
			}},
			{name: "DelegateWithKey", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.Delegate(ctx, id, api.DelegationRequest{FencingToken: 1, Purpose: "p", Child: spec(api.Ptr("k"))}))
			}},
		},
		"enqueueRun": {
			{name: "EnqueueRun", call: func(ctx context.Context, c *client.Client) error {
				return e(c.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: spec(nil)}))
			}},
			{name: "EnqueueRunWithKey", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: spec(api.Ptr("k"))}))
			}},
		},
		"bulkRuns": {
			{name: "BulkRuns", call: func(ctx context.Context, c *client.Client) error {
				return e(c.BulkRuns(ctx, api.BulkRunsRequest{Action: api.BulkCancel, RunIDs: []uuid.UUID{id}}))
			}},
			{name: "BulkRunsWithKey", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.BulkRuns(ctx, api.BulkRunsRequest{Action: api.BulkCancel, RunIDs: []uuid.UUID{id}, IdempotencyKey: api.Ptr("k")}))
			}},
		},
		"getOperation": one("GetOperation", func(ctx context.Context, c *client.Client) error { return e(c.GetOperation(ctx, id)) }),
		"forkRun": {
			{name: "ForkRun", call: func(ctx context.Context, c *client.Client) error {
				return e(c.ForkRun(ctx, id, api.ForkRequest{CheckpointID: id}))
			}},
			{name: "ForkRunWithKey", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.ForkRun(ctx, id, api.ForkRequest{CheckpointID: id, IdempotencyKey: api.Ptr("k")}))
			}},
		},
		"finishCall": {
			{name: "FinishCall", call: func(ctx context.Context, c *client.Client) error {
				return e(c.FinishCall(ctx, id, id, api.FinishCallRequest{FencingToken: 1, Status: api.CallFinishStatus("succeeded")}, ""))
			}},
			{name: "FinishCallIfMatch", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.FinishCall(ctx, id, id, api.FinishCallRequest{FencingToken: 1, Status: api.CallFinishStatus("succeeded")}, `"1"`))
			}},
		},
		"getAttempt": one("GetAttempt", func(ctx context.Context, c *client.Client) error { return e3(c.GetAttempt(ctx, id)) }),
		"getAttemptTimeline": {{name: "Timeline", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.Timeline(ctx, id, api.PageParams{}))
		}}},
		"getAttemptUsage": one("AttemptUsage", func(ctx context.Context, c *client.Client) error { return e(c.AttemptUsage(ctx, id)) }),
		"getRunUsage":     one("RunUsage", func(ctx context.Context, c *client.Client) error { return e(c.RunUsage(ctx, id)) }),
		"getCall":         one("GetCall", func(ctx context.Context, c *client.Client) error { return e3(c.GetCall(ctx, id, id)) }),
		"getCheckpoint":   one("GetCheckpoint", func(ctx context.Context, c *client.Client) error { return e(c.GetCheckpoint(ctx, id, id)) }),
		"getDecision":     one("GetDecision", func(ctx context.Context, c *client.Client) error { return e3(c.GetDecision(ctx, id)) }),
		"getDelegation":   one("GetDelegation", func(ctx context.Context, c *client.Client) error { return e(c.GetDelegation(ctx, id)) }),
		"getHealth":       {{name: "Healthz", noBody: true, call: func(ctx context.Context, c *client.Client) error { return c.Healthz(ctx) }}},
		"getLastCheckpoint": one("LastCheckpoint", func(ctx context.Context, c *client.Client) error {
			return e(c.LastCheckpoint(ctx, id))
		}),
		"getOpenAPI":   one("OpenAPI", func(ctx context.Context, c *client.Client) error { return e(c.OpenAPI(ctx)) }),
		"getProject":   one("GetProject", func(ctx context.Context, c *client.Client) error { return e3(c.GetProject(ctx, "p")) }),
		"getReadiness": {{name: "Readyz", noBody: true, call: func(ctx context.Context, c *client.Client) error { return c.Readyz(ctx) }}},
		"getRelease":   one("GetRelease", func(ctx context.Context, c *client.Client) error { return e3(c.GetRelease(ctx, "r", "1")) }),
		"getRun":       one("GetRun", func(ctx context.Context, c *client.Client) error { return e(c.GetRun(ctx, id)) }),
		"heartbeatAttempt": one("Heartbeat", func(ctx context.Context, c *client.Client) error {
			return e(c.Heartbeat(ctx, id, api.HeartbeatRequest{FencingToken: 1}))
		}),
		"listAttemptDecisions": {{name: "ListAttemptDecisions", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListAttemptDecisions(ctx, id, api.PageParams{}))
		}}},
		"listRunDecisions": {{name: "ListRunDecisions", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListRunDecisions(ctx, id, api.PageParams{}))
		}}},
		"listAttempts": {{name: "ListAttempts", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListAttempts(ctx, api.ListAttemptsParams{}))
		}}},
		"listCalls": {{name: "ListCalls", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListCalls(ctx, id, api.PageParams{}))
		}}},
		"listTenantCalls": {{name: "ListTenantCalls", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListTenantCalls(ctx, api.ListTenantCallsParams{}))
		}}},
		"listCheckpoints": {{name: "ListCheckpoints", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListCheckpoints(ctx, id, api.PageParams{}))
		}}},
		"listDecisions": {{name: "ListDecisions", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListDecisions(ctx, api.ListDecisionsParams{}))
		}}},
		"listDelegations": {{name: "ListDelegations", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListDelegations(ctx, id, api.PageParams{}))
		}}},
		"listProjects": {{name: "ListProjects", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListProjects(ctx, api.PageParams{}))
		}}},
		"insightAttemptsEnded": one("InsightAttemptsEnded", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightAttemptsEnded(ctx, api.InsightGroupedParams{}))
		}),
		"insightAttemptsPerRun": one("InsightAttemptsPerRun", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightAttemptsPerRun(ctx, api.InsightGroupedParams{}))
		}),
		"insightUsage": one("InsightUsage", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightUsage(ctx, api.InsightUsageParams{}))
		}),
		"insightCalls": one("InsightCalls", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightCalls(ctx, api.InsightParams{}))
		}),
		"insightClaimLatency": one("InsightClaimLatency", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightClaimLatency(ctx, api.InsightGroupedParams{}))
		}),
		"insightDecisions": one("InsightDecisions", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightDecisions(ctx, api.InsightParams{}))
		}),
		"insightLeasesLost": one("InsightLeasesLost", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightLeasesLost(ctx, api.InsightGroupedParams{}))
		}),
		"insightRunsEnded": one("InsightRunsEnded", func(ctx context.Context, c *client.Client) error {
			return e(c.InsightRunsEnded(ctx, api.InsightGroupedParams{}))
		}),
		"listReleases": {{name: "ListReleases", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListReleases(ctx, api.ListReleasesParams{}))
		}}},
		"listRuns": {{name: "ListRuns", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListRuns(ctx, api.ListRunsParams{}))
		}}},
		"patchAttempt": {
			{name: "SetPhase", call: func(ctx context.Context, c *client.Client) error {
				return e(c.PatchAttempt(ctx, id, api.PatchAttemptRequest{FencingToken: 1, Phase: api.Ptr(api.PhaseActing)}))
			}},
			{name: "Correction", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.PatchAttempt(ctx, id, api.PatchAttemptRequest{FencingToken: 1, Correction: true}))
			}},
		},
		"putProject": {
			{name: "PutProject", call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutProject(ctx, "p", api.PutProjectRequest{}, ""))
			}},
			{name: "PutProjectIfMatch", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutProject(ctx, "p", api.PutProjectRequest{}, `"1"`))
			}},
		},
		"putWebhook": {
			{name: "PutWebhook", call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutWebhook(ctx, "w", api.PutWebhookRequest{}, ""))
			}},
			{name: "PutWebhookIfMatch", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutWebhook(ctx, "w", api.PutWebhookRequest{}, `"1"`))
			}},
		},
		"getWebhook":          one("GetWebhook", func(ctx context.Context, c *client.Client) error { return e3(c.GetWebhook(ctx, "w")) }),
		"rotateWebhookSecret": one("RotateWebhookSecret", func(ctx context.Context, c *client.Client) error { return e(c.RotateWebhookSecret(ctx, "w")) }),
		"redeliverWebhook":    one("Redeliver", func(ctx context.Context, c *client.Client) error { return e(c.Redeliver(ctx, id)) }),
		"deleteWebhook": {{name: "DeleteWebhook", noBody: true, ok: answer(204, ""), call: func(ctx context.Context, c *client.Client) error {
			return c.DeleteWebhook(ctx, "w")
		}}},
		"listWebhooks": {{name: "ListWebhooks", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListWebhooks(ctx, api.PageParams{}))
		}}},
		"listWebhookDeliveries": {{name: "ListWebhookDeliveries", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListWebhookDeliveries(ctx, api.ListWebhookDeliveriesParams{}))
		}}},
		"putRelease": {
			{name: "PutRelease", call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutRelease(ctx, "r", "1", api.PutReleaseRequest{}, ""))
			}},
			{name: "PutReleaseIfMatch", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutRelease(ctx, "r", "1", api.PutReleaseRequest{}, `"1"`))
			}},
		},
		"recordCall": one("RecordCall", func(ctx context.Context, c *client.Client) error {
			return e3(c.RecordCall(ctx, id, api.CallRequest{FencingToken: 1, Sequence: api.Ptr(int32(0))}))
		}),
		"releaseAttempt": one("ReleaseAttempt", func(ctx context.Context, c *client.Client) error {
			return e(c.ReleaseAttempt(ctx, id, api.ReleaseAttemptRequest{FencingToken: 1}))
		}),
		"releaseTaskLock": {{name: "ReleaseLock", noBody: true, ok: answer(204, ""), call: func(ctx context.Context, c *client.Client) error {
			return c.ReleaseLock(ctx, "a", "t", "h")
		}}},
		"putSchedule": {
			{name: "PutSchedule", call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutSchedule(ctx, "s", api.PutScheduleRequest{Cron: "@daily", Run: spec(nil)}, ""))
			}},
			{name: "PutScheduleIfMatch", ifMatch: true, call: func(ctx context.Context, c *client.Client) error {
				return e3(c.PutSchedule(ctx, "s", api.PutScheduleRequest{Cron: "@daily", Run: spec(nil)}, `"1"`))
			}},
		},
		"getSchedule": one("GetSchedule", func(ctx context.Context, c *client.Client) error { return e3(c.GetSchedule(ctx, "s")) }),
		"listSchedules": {{name: "ListSchedules", ok: page, call: func(ctx context.Context, c *client.Client) error {
			return e(c.ListSchedules(ctx, api.PageParams{}))
		}}},
		"deleteSchedule": {{name: "DeleteSchedule", noBody: true, ok: answer(204, ""), call: func(ctx context.Context, c *client.Client) error {
			return c.DeleteSchedule(ctx, "s")
		}}},
		"enqueueRunBatch": one("EnqueueBatch", func(ctx context.Context, c *client.Client) error {
			return e(c.EnqueueBatch(ctx, []api.EnqueueRequest{{RunSpec: spec(nil)}}))
		}),
		"requestDecision": {
			{name: "RequestDecision", call: func(ctx context.Context, c *client.Client) error {
				return e(c.RequestDecision(ctx, id, api.DecisionRequest{FencingToken: 1, Kind: api.Ptr(api.DecisionApproval)}))
			}},
			{name: "RequestDecisionWithKey", bodySet: true, call: func(ctx context.Context, c *client.Client) error {
				return e(c.RequestDecision(ctx, id, api.DecisionRequest{FencingToken: 1, Kind: api.Ptr(api.DecisionApproval),
					IdempotencyKey: api.Ptr("k")}))
			}},
		},
		"parkAttempt": one("ParkAttempt", func(ctx context.Context, c *client.Client) error {
			return e(c.ParkAttempt(ctx, id, api.ParkAttemptRequest{FencingToken: 1, DecisionIDs: []uuid.UUID{id}}))
		}),
	}
}

// notSentOnce is a transport whose first request fails to connect (nothing reaches the
// server); the others go through.
type notSentOnce struct{ n atomic.Int64 }

func (n *notSentOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if n.n.Add(1) == 1 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// unreadable answers 200 with a body cut short.
func unreadable(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"runId":`))
}

// TestClientFollowsTheRetryTable: for every operation of api/retry.json, every way the Go
// SDK sends it and every failure class, the SDK sends the call again exactly when the table
// says so; a conditional call whose repeat is refused with an ambiguous code reports
// ErrMaybeApplied; the policy's numbers are the SDK's defaults; and every operation of the
// served OpenAPI document (but HEAD ones) has an entry, and no entry is not an operation.
func TestClientFollowsTheRetryTable(t *testing.T) {
	t.Parallel()
	rt := readRetryTable(t)
	calls := goCalls()

	t.Run("Operations", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, app.Config{})
		raw, err := s.Runtime.OpenAPI(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]struct {
				OperationID string `json:"operationId"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		ops := map[string]bool{}
		for _, methods := range doc.Paths {
			for method, op := range methods {
				if method == "head" || strings.HasSuffix(op.OperationID, "Head") || op.OperationID == "" {
					continue
				}
				ops[op.OperationID] = true
				if _, ok := rt.Operations[op.OperationID]; !ok {
					t.Errorf("operation %s is not in api/retry.json", op.OperationID)
				}
			}
		}
		for op := range rt.Operations {
			if !ops[op] {
				t.Errorf("api/retry.json has %s, which the OpenAPI document does not", op)
			}
		}
	})

	// The route coverage: every operation of the generated operation table (so every route
	// the server registers) has a Go SDK call in goCalls, or a reason in notInSDK; and the
	// table's rules are api/retry.json's.
	t.Run("Coverage", func(t *testing.T) {
		t.Parallel()
		for op, e := range api.Endpoints() {
			_, called := calls[op]
			why, skipped := notInSDK[op]
			switch {
			case !called && !skipped:
				t.Errorf("operation %s (%s %s) has no Go SDK call in goCalls (add a method and a variant, or a reason in notInSDK)", op, e.Method, e.Path)
			case called && skipped:
				t.Errorf("notInSDK gives %s a reason (%s), but the SDK calls it", op, why)
			}
			want := rt.Operations[op]
			if e.Repeat != want.Repeat || e.WhenIfMatch != want.WhenIfMatch || !maps.Equal(e.WhenBody, want.WhenBody) ||
				!slices.Equal(e.Ambiguous, codesOf(want.Ambiguous)) {
				t.Errorf("%s: the operation table's rule %+v is not api/retry.json's %+v", op, e, want)
			}
		}
		for op := range calls {
			if _, ok := api.EndpointOf(op); !ok {
				t.Errorf("goCalls calls %s, which is no operation", op)
			}
		}
	})

	t.Run("Policy", func(t *testing.T) {
		t.Parallel()
		p := client.DefaultRetryPolicy()
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		if p.MaxAttempts != rt.Policy.MaxAttempts || p.Base != ms(rt.Policy.BaseMs) || p.Max != ms(rt.Policy.MaxMs) ||
			p.MaxRetryAfter != ms(rt.Policy.MaxRetryAfterMs) {
			t.Fatalf("the SDK's default policy %+v is not the table's %+v", p, rt.Policy)
		}
		// A Retry-After is waited with up to retryAfterJitter more.
		c, _, waits := scripted(t, problem(http.StatusTooManyRequests, api.CodeRateLimited, "Retry-After", "2"), answer(200, runJSON))
		if _, err := c.GetRun(context.Background(), uuid.New()); err != nil {
			t.Fatal(err)
		}
		w := (*waits)[0]
		if hi := time.Duration(float64(2*time.Second) * (1 + rt.Policy.RetryAfterJitter)); w < 2*time.Second || w > hi {
			t.Fatalf("waited %s after Retry-After: 2, want 2s..%s", w, hi)
		}
	})

	failures := map[string]func(http.ResponseWriter, *http.Request){
		"status429":        problem(http.StatusTooManyRequests, api.CodeRateLimited),
		"status502":        problem(http.StatusBadGateway, "bad_gateway"),
		"status503":        problem(http.StatusServiceUnavailable, api.CodeDatabaseUnavailable),
		"status504":        problem(http.StatusGatewayTimeout, "gateway_timeout"),
		"noAnswer":         hangUp,
		"unreadableAnswer": unreadable,
		"otherStatus":      problem(http.StatusConflict, api.CodeStaleLease),
		"notSent":          nil, // the transport's
	}
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range rt.Failures {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range kinds {
		if _, ok := failures[k]; !ok {
			t.Fatalf("api/retry.json names failure class %s, which this test cannot make", k)
		}
	}
	for op, vs := range calls {
		for _, v := range vs {
			for _, kind := range kinds {
				if kind == "unreadableAnswer" && v.noBody {
					continue // the SDK reads no body of its answer: nothing to be unreadable
				}
				t.Run(op+"/"+v.name+"/"+kind, func(t *testing.T) {
					t.Parallel()
					class := rt.class(op, v.bodySet, v.ifMatch)
					if _, ok := rt.RepeatClasses[class]; !ok {
						t.Fatalf("repeat class %q of %s is not in the table", class, op)
					}
					want := 1
					if rt.retries(t, kind, class) {
						want = 2
					}
					ok := v.ok
					if ok == nil {
						ok = answer(200, `{}`)
					}
					first := failures[kind]
					steps := []func(http.ResponseWriter, *http.Request){first, ok}
					var opts []client.Option
					if kind == "notSent" {
						steps = []func(http.ResponseWriter, *http.Request){ok}
						opts = append(opts, client.WithHTTPClient(&http.Client{Transport: &notSentOnce{}}))
					}
					c, sc := scriptedWith(t, opts, steps...)
					err := v.call(context.Background(), c)
					tries := sc.tries()
					if kind == "notSent" {
						tries++ // the first try never reached the server
					}
					if tries != want {
						t.Fatalf("%d tries, want %d (class %s; err %v)", tries, want, class, err)
					}
					if want == 2 && err != nil {
						t.Fatalf("the retry's answer: %v", err)
					}
					if want == 1 && err == nil {
						t.Fatal("no error after a failure not retried")
					}
				})
			}
			if e := rt.Operations[op]; rt.class(op, v.bodySet, v.ifMatch) == "conditional" {
				for _, code := range e.Ambiguous {
					t.Run(op+"/"+v.name+"/ambiguous-"+code, func(t *testing.T) {
						t.Parallel()
						status := http.StatusConflict
						if code == string(api.CodePreconditionFailed) {
							status = http.StatusPreconditionFailed
						}
						c, _ := scriptedWith(t, nil, hangUp, problem(status, api.ProblemCode(code)))
						if err := v.call(context.Background(), c); !errors.Is(err, client.ErrMaybeApplied) {
							t.Fatalf("a repeat refused with %s after a lost answer: %v, want ErrMaybeApplied", code, err)
						}
					})
				}
			}
		}
	}
}

// scriptedWith is scripted with more options; its waits are skipped.
func scriptedWith(t *testing.T, opts []client.Option, steps ...func(http.ResponseWriter, *http.Request)) (*client.Client, *script) {
	t.Helper()
	sc := &script{steps: steps}
	hs := httptest.NewServer(sc)
	t.Cleanup(hs.Close)
	c, err := client.New(append([]client.Option{client.WithBaseURL(hs.URL), client.WithKey("k")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	client.SetSleep(c, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })
	return c, sc
}
