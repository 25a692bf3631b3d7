package genclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apitest/genclient"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// TestGeneratedClientDrivesARun drives a run's whole life through the client generated from
// the document, against the real service (its exchanges checked against the document too):
// project, release, enqueue, claim, heartbeat, checkpoint, call, a decision answered by an
// admin, complete, and the attempts listed.
func TestGeneratedClientDrivesARun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := apitest.New(t, apitest.Config{DB: dbtest.SQLite().Open(t, dbtest.Options{}), Serve: true})
	tenant := dbtest.NewTenant(t, srv.DB)
	keys := srv.Keys
	client := func(role string) *genclient.ClientWithResponses {
		key, _, err := keys.CreateKey(ctx, tenant, role)
		if err != nil {
			t.Fatal(err)
		}
		c, err := genclient.NewClientWithResponses(srv.URL, genclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin, runtime := client(tenancy.RoleAdmin), client(tenancy.RoleRuntime)
	want := func(what string, err error, res *http.Response, status int, body []byte) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.StatusCode != status {
			t.Fatalf("%s: status %d, want %d: %s", what, res.StatusCode, status, body)
		}
	}

	project, err := admin.PutProjectWithResponse(ctx, "web", &genclient.PutProjectParams{},
		genclient.PutProjectRequest{Active: ptr(true), RetentionDays: ptr(30)})
	want("put project", err, project.HTTPResponse, http.StatusCreated, project.Body)
	if project.JSON201 == nil || project.JSON201.ProjectId != "web" || project.JSON201.RetentionDays != 30 || project.Headers201.Location != "/v1/projects/web" {
		t.Fatalf("project %s", project.Body)
	}

	refs := []any{map[string]any{"path": "prompts/review.md", "sha256": "9b74c989"}}
	raw, _ := json.Marshal(refs)
	canonical, err := releases.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	release, err := runtime.PutReleaseWithResponse(ctx, "acme-reviewer", "1.0.0", &genclient.PutReleaseParams{},
		genclient.PutReleaseRequest{ManifestHash: releases.ManifestHash(canonical), ContentRefs: refs, State: genclient.ReleaseStateActive})
	want("put release", err, release.HTTPResponse, http.StatusCreated, release.Body)
	if release.JSON201.State != genclient.ReleaseStateActive || release.JSON201.InFlightPolicy != genclient.InFlightPolicyDrain {
		t.Fatalf("release %s", release.Body)
	}

	band := genclient.BandInteractive
	enq, err := runtime.EnqueueRunWithResponse(ctx, &genclient.EnqueueRunParams{Traceparent: ptr("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}, genclient.EnqueueRequest{
		Subject: "review:42", Kind: "review", ProjectId: "web", AgentId: "reviewer", StepId: uuid.New(), SnapshotId: uuid.New(),
		Band: &band, Input: map[string]any{"pr": 42}, IdempotencyKey: ptr("pr-42-opened"),
	})
	want("enqueue", err, enq.HTTPResponse, http.StatusCreated, enq.Body)
	run := enq.JSON201
	if run.State != genclient.RunStateQueued || run.Band != genclient.BandInteractive || run.ParentRunId != nil || run.AttemptsSpent != 0 {
		t.Fatalf("enqueued %s", enq.Body)
	}

	claim, err := runtime.ClaimRunWithResponse(ctx, genclient.ClaimRequest{HolderId: "worker-1", ReleaseId: "acme-reviewer",
		AdapterVersion: "1.0.0", ModelProfileId: "default", LeaseSeconds: ptr(60)})
	want("claim", err, claim.HTTPResponse, http.StatusOK, claim.Body)
	cl := claim.JSON200
	if cl.Run.RunId != run.RunId || cl.Run.State != genclient.RunStateLeased || cl.Attempt.State != genclient.AttemptStateRunning ||
		cl.Lease.FencingToken < 1 || cl.Attempt.Phase != genclient.PhaseStarting {
		t.Fatalf("claim %s", claim.Body)
	}
	attempt, token := cl.Attempt.AttemptId, cl.Lease.FencingToken

	hb, err := runtime.HeartbeatAttemptWithResponse(ctx, attempt, genclient.HeartbeatRequest{FencingToken: token, LeaseSeconds: ptr(120)})
	want("heartbeat", err, hb.HTTPResponse, http.StatusOK, hb.Body)
	if hb.JSON200.CancelRequested || !hb.JSON200.LeasedUntil.After(cl.Lease.LeasedUntil) {
		t.Fatalf("heartbeat %s after lease until %v", hb.Body, cl.Lease.LeasedUntil)
	}

	cp, err := runtime.AppendCheckpointWithResponse(ctx, attempt, genclient.CheckpointRequest{FencingToken: token, Sequence: 0,
		Phase: genclient.PhasePlanning, AdapterStateRef: "s3://state/0", AdapterVersion: "1.0.0", Hash: "h0"})
	want("checkpoint", err, cp.HTTPResponse, http.StatusCreated, cp.Body)
	if cp.JSON201.Sequence != 0 || cp.JSON201.Phase != genclient.PhasePlanning {
		t.Fatalf("checkpoint %s", cp.Body)
	}

	call, err := runtime.RecordCallWithResponse(ctx, attempt, genclient.CallRequest{FencingToken: token, Sequence: 0,
		Kind: genclient.CallKindTool, Target: "tool://github/diff", RequestHash: "r0"})
	want("record call", err, call.HTTPResponse, http.StatusCreated, call.Body)
	if call.JSON201.Status != genclient.CallStatusStarted || call.JSON201.PolicyDecisionId != nil {
		t.Fatalf("call %s", call.Body)
	}
	finished, err := runtime.FinishCallWithResponse(ctx, attempt, call.JSON201.CallId, &genclient.FinishCallParams{IfMatch: &call.Headers201.ETag},
		genclient.FinishCallRequest{FencingToken: token, Status: genclient.CallFinishStatusSucceeded, ReceiptRef: ptr("receipt://0")})
	want("finish call", err, finished.HTTPResponse, http.StatusOK, finished.Body)
	if finished.JSON200.Status != genclient.CallStatusSucceeded || finished.JSON200.EndedAt == nil {
		t.Fatalf("finished call %s", finished.Body)
	}

	asked, err := runtime.RequestDecisionWithResponse(ctx, attempt, genclient.DecisionRequest{FencingToken: token,
		Kind: genclient.DecisionKindChoice, Options: []any{"merge", "request changes"}, Recommendation: ptr("merge")})
	want("request decision", err, asked.HTTPResponse, http.StatusCreated, asked.Body)
	decision := asked.JSON201
	if decision.Status != genclient.DecisionStatusPending {
		t.Fatalf("decision %s", asked.Body)
	}
	inbox, err := admin.ListDecisionsWithResponse(ctx, &genclient.ListDecisionsParams{Status: ptr(genclient.DecisionStatusPending)})
	want("inbox", err, inbox.HTTPResponse, http.StatusOK, inbox.Body)
	if len(inbox.JSON200.Items) != 1 || inbox.JSON200.Items[0].DecisionId != decision.DecisionId {
		t.Fatalf("inbox %s", inbox.Body)
	}
	answered, err := admin.AnswerDecisionWithResponse(ctx, decision.DecisionId, &genclient.AnswerDecisionParams{IfMatch: asked.Headers201.ETag},
		genclient.AnswerDecisionRequest{Status: genclient.AnswerStatusApproved, Answer: "merge"})
	want("answer decision", err, answered.HTTPResponse, http.StatusOK, answered.Body)
	read, err := runtime.GetDecisionWithResponse(ctx, decision.DecisionId, &genclient.GetDecisionParams{})
	want("read decision", err, read.HTTPResponse, http.StatusOK, read.Body)
	if read.JSON200.Status != genclient.DecisionStatusApproved || read.JSON200.Answer != "merge" || read.JSON200.AnsweredAt == nil {
		t.Fatalf("answered decision %s", read.Body)
	}

	done, err := runtime.CompleteAttemptWithResponse(ctx, attempt, genclient.CompleteAttemptRequest{FencingToken: token,
		State: genclient.CompletionStateSucceeded, OutcomeHash: ptr("sha256:0")})
	want("complete", err, done.HTTPResponse, http.StatusOK, done.Body)
	if done.JSON200.State != genclient.AttemptStateSucceeded || done.JSON200.EndedAt == nil {
		t.Fatalf("completed %s", done.Body)
	}

	listed, err := admin.ListAttemptsWithResponse(ctx, &genclient.ListAttemptsParams{RunId: &run.RunId})
	want("list attempts", err, listed.HTTPResponse, http.StatusOK, listed.Body)
	if len(listed.JSON200.Items) != 1 || listed.JSON200.Items[0].AttemptId != attempt || listed.JSON200.Items[0].State != genclient.AttemptStateSucceeded ||
		listed.JSON200.NextCursor != nil {
		t.Fatalf("attempts %s", listed.Body)
	}
	ended, err := admin.GetRunWithResponse(ctx, run.RunId, &genclient.GetRunParams{})
	want("read run", err, ended.HTTPResponse, http.StatusOK, ended.Body)
	if ended.JSON200.State != genclient.RunStateEnded || ended.JSON200.Outcome == nil || *ended.JSON200.Outcome != genclient.RunOutcomeSucceeded ||
		ended.JSON200.AttemptsSpent != 0 {
		t.Fatalf("ended run %s", ended.Body)
	}
	timeline, err := admin.GetAttemptTimelineWithResponse(ctx, attempt, &genclient.GetAttemptTimelineParams{})
	want("timeline", err, timeline.HTTPResponse, http.StatusOK, timeline.Body)
	if n := len(timeline.JSON200.Items); n != 4 || timeline.JSON200.Items[3].Kind != genclient.TimelineKindEnd {
		t.Fatalf("timeline has %d entries, want a checkpoint, a call, a decision and the end: %s", n, timeline.Body)
	}
	if c, err := timeline.JSON200.Items[0].Item.AsCheckpoint(); err != nil || c.Hash != "h0" {
		t.Fatalf("first timeline item %v %v", c, err)
	}
	if end, err := timeline.JSON200.Items[3].Item.AsAttemptEnd(); err != nil || end.State != genclient.AttemptStateSucceeded {
		t.Fatalf("end of the timeline %v %v", end, err)
	}

	// A problem decodes as the document says.
	stale, err := runtime.HeartbeatAttemptWithResponse(ctx, attempt, genclient.HeartbeatRequest{FencingToken: token})
	want("heartbeat after the end", err, stale.HTTPResponse, http.StatusConflict, stale.Body)
	if p := stale.ApplicationproblemJSON409; p == nil || p.Status != http.StatusConflict || p.Code == "" {
		t.Fatalf("problem %s", stale.Body)
	}
}

func ptr[T any](v T) *T { return &v }
