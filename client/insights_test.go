package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

// TestInsightMethods: the typed insight methods read what happened (a run claimed with the
// test release and completed failed), with the window and filters as parameters, and a
// runtime key is refused.
func TestInsightMethods(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	s.enqueue(t, "review")
	cl, err := s.Runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: testRelease, AdapterVersion: testAdapter,
		ModelProfileID: testModel})
	if err != nil || cl == nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := s.Runtime.CompleteAttempt(ctx, cl.Attempt.AttemptID, api.CompleteAttemptRequest{
		FencingToken: cl.Lease.FencingToken, State: api.CompleteFailed}); err != nil {
		t.Fatal(err)
	}
	// Insights read the roll-ups, which the service's projector keeps up in the background.
	if err := s.App.CatchUpFeed(ctx); err != nil {
		t.Fatal(err)
	}
	group := api.GroupRelease
	runs, err := s.Admin.InsightRunsEnded(ctx, api.InsightGroupedParams{GroupBy: &group,
		InsightParams: api.InsightParams{Bucket: api.Ptr(api.Bucket5m)}})
	if err != nil {
		t.Fatal(err)
	}
	if runs.Window.Bucket != api.Bucket5m || (len(runs.Buckets) != 288 && len(runs.Buckets) != 289) || len(runs.Groups) != 1 ||
		runs.Groups[0].Key != testRelease || runs.Groups[0].Total != 1 {
		t.Errorf("runs ended: window %+v, %d buckets, groups %+v", runs.Window, len(runs.Buckets), runs.Groups)
	}
	per, err := s.Admin.InsightAttemptsPerRun(ctx, api.InsightGroupedParams{})
	if err != nil || len(per.Groups) != 1 || per.Groups[0].Runs != 1 {
		t.Errorf("attempts per run: %+v %v", per, err)
	}
	other := "another-kind"
	att, err := s.Admin.InsightAttemptsEnded(ctx, api.InsightGroupedParams{InsightParams: api.InsightParams{Kind: &other}})
	if err != nil || len(att.Groups) != 0 {
		t.Errorf("attempts of another kind: %+v %v", att.Groups, err)
	}
	if _, err := s.Admin.InsightLeasesLost(ctx, api.InsightGroupedParams{}); err != nil {
		t.Error(err)
	}
	if lat, err := s.Admin.InsightClaimLatency(ctx, api.InsightGroupedParams{}); err != nil || len(lat.Groups) != 1 ||
		lat.Groups[0].Latency.Count != 1 {
		t.Errorf("claim latency: %+v %v", lat, err)
	}
	if _, err := s.Admin.InsightCalls(ctx, api.InsightParams{}); err != nil {
		t.Error(err)
	}
	if ds, err := s.Admin.InsightDecisions(ctx, api.InsightParams{}); err != nil || len(ds.Kinds) != 3 {
		t.Errorf("decisions: %+v %v", ds, err)
	}
	if _, err := s.Runtime.InsightRunsEnded(ctx, api.InsightGroupedParams{}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("a runtime key: %v, want ErrForbidden", err)
	}
}
