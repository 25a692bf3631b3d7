package client_test

import (
	"context"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/app"
)

// TestListItemsCarryTheirETag: a decision, project or release in a listing carries the
// ETag a GET of it answers, so an inbox answers (If-Match) without reading each item.
func TestListItemsCarryTheirETag(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	s.enqueue(t, "review")
	cl, err := s.Runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: testRelease, AdapterVersion: testAdapter,
		ModelProfileID: testModel, LeaseSeconds: api.Ptr(600)})
	if err != nil || cl == nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := s.Runtime.RequestDecision(ctx, cl.Attempt.AttemptID, api.DecisionRequest{FencingToken: cl.Lease.FencingToken,
		Kind: api.Ptr(api.DecisionApproval)}); err != nil {
		t.Fatal(err)
	}

	decisions, err := s.Admin.ListDecisions(ctx, api.ListDecisionsParams{})
	if err != nil || len(decisions.Items) != 1 {
		t.Fatalf("inbox: %+v %v", decisions, err)
	}
	item := decisions.Items[0]
	if _, etag, err := s.Admin.GetDecision(ctx, item.DecisionID); err != nil || item.ETag == "" || item.ETag != etag {
		t.Errorf("decision item etag %q, GET %q (%v)", item.ETag, etag, err)
	}
	// The item's ETag answers it.
	if _, err := s.Admin.AnswerDecision(ctx, item.DecisionID, item.ETag, api.AnswerDecisionRequest{Status: api.AnswerApproved}); err != nil {
		t.Errorf("answer with the item's etag: %v", err)
	}
	byAttempt, err := s.Runtime.ListAttemptDecisions(ctx, cl.Attempt.AttemptID, api.PageParams{})
	if _, etag, _ := s.Admin.GetDecision(ctx, item.DecisionID); err != nil || len(byAttempt.Items) != 1 || byAttempt.Items[0].ETag != etag {
		t.Errorf("an attempt's decisions: %+v %v, want etag %s", byAttempt.Items, err, etag)
	}

	projects, err := s.Admin.ListProjects(ctx, api.PageParams{})
	if err != nil || len(projects.Items) != 1 {
		t.Fatalf("projects: %+v %v", projects, err)
	}
	if _, etag, err := s.Admin.GetProject(ctx, "p1"); err != nil || projects.Items[0].ETag != etag {
		t.Errorf("project item etag %q, GET %q (%v)", projects.Items[0].ETag, etag, err)
	}

	releases, err := s.Admin.ListReleases(ctx, api.ListReleasesParams{})
	if err != nil || len(releases.Items) != 1 {
		t.Fatalf("releases: %+v %v", releases, err)
	}
	if _, etag, err := s.Admin.GetRelease(ctx, testRelease, testAdapter); err != nil || releases.Items[0].ETag != etag {
		t.Errorf("release item etag %q, GET %q (%v)", releases.Items[0].ETag, etag, err)
	}
}
