package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/releases"
)

// Every problem code of the wire has its sentinel.
func TestEveryProblemCodeHasASentinel(t *testing.T) {
	t.Parallel()
	for _, code := range api.ProblemCodes() {
		s := client.SentinelOf(code)
		if s == nil {
			t.Errorf("no sentinel for %s", code)
			continue
		}
		p := &client.Problem{Problem: api.Problem{Code: code, Status: 409}}
		if !errors.Is(fmt.Errorf("wrapped: %w", p), s) {
			t.Errorf("a %s problem does not match its sentinel", code)
		}
		if client.CodeOf(p) != code {
			t.Errorf("CodeOf %s", code)
		}
	}
	p := &client.Problem{Problem: api.Problem{Code: api.CodeStaleLease}}
	if errors.Is(p, client.ErrLeaseExpired) {
		t.Error("a stale_lease problem matches ErrLeaseExpired")
	}
}

// The service's problems arrive as *Problem with status, code, detail and field errors.
func TestProblemsFromTheService(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()

	_, err := s.Runtime.GetRun(ctx, uuid.New())
	var p *client.Problem
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &p) || p.Status != 404 || p.Detail == "" || p.Instance == "" {
		t.Fatalf("missing run: %#v", err)
	}

	_, err = s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: api.RunSpec{Subject: " padded", Kind: "k", ProjectID: "p1", AgentID: "a"}})
	if !errors.Is(err, client.ErrInvalidRequest) || !errors.As(err, &p) || len(p.Errors) == 0 {
		t.Fatalf("invalid enqueue: %v", err)
	}

	sp := spec("k")
	sp.ProjectID = "nope"
	if _, err = s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp}); !errors.Is(err, client.ErrUnknownProject) {
		t.Fatalf("unknown project: %v", err)
	}

	if _, _, err = s.Runtime.PutProject(ctx, "p2", api.PutProjectRequest{}, ""); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("runtime creating a project: %v", err)
	}

	bad := s.client(t, "ldg_0000000000000000_nope")
	if _, err = bad.GetRun(ctx, uuid.New()); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("bad key: %v", err)
	}

}

// An enqueue repeated under its idempotency key answers the run it made; another request
// under the key is refused.
func TestIdempotencyKeyRepeatsAndReuse(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	sp := spec("k")
	sp.IdempotencyKey = api.Ptr("event-1")
	first, err := s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp})
	if err != nil || again.RunID != first.RunID {
		t.Fatalf("repeat: %v, %v", again.RunID, err)
	}
	sp.Kind = "other"
	if _, err = s.Runtime.EnqueueRun(ctx, api.EnqueueRequest{RunSpec: sp}); !errors.Is(err, client.ErrIdempotencyKeyReused) {
		t.Fatalf("reused key: %v", err)
	}
}

// Iterators follow nextCursor to the end, and stop when the loop does.
func TestIteratorsFollowTheCursor(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	want := map[uuid.UUID]bool{}
	for range 5 {
		want[s.enqueue(t, "page").RunID] = true
	}
	seen := 0
	for r, err := range s.Runtime.Runs(ctx, api.ListRunsParams{Kind: api.Ptr("page"), PageParams: api.PageParams{Limit: api.Ptr(2)}}) {
		if err != nil {
			t.Fatal(err)
		}
		if !want[r.RunID] {
			t.Fatalf("unexpected run %s", r.RunID)
		}
		delete(want, r.RunID)
		seen++
	}
	if seen != 5 || len(want) != 0 {
		t.Fatalf("saw %d runs, %d missing", seen, len(want))
	}
	n := 0
	for _, err := range s.Runtime.Runs(ctx, api.ListRunsParams{PageParams: api.PageParams{Limit: api.Ptr(1)}}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	for _, err := range s.Runtime.Runs(ctx, api.ListRunsParams{PageParams: api.PageParams{Limit: api.Ptr(1000)}}) {
		if !errors.Is(err, client.ErrInvalidRequest) {
			t.Fatalf("limit 1000: %v", err)
		}
	}
}

// The change feed yields every attempt changed after the ETag given, oldest change first,
// and resumes after the last one seen.
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	claimOne := func() api.Claim {
		s.enqueue(t, "feed")
		cl, err := s.Runtime.ClaimRun(ctx, api.ClaimRequest{HolderID: "h", ReleaseID: testRelease, AdapterVersion: testAdapter, ModelProfileID: testModel})
		if err != nil || cl == nil {
			t.Fatalf("claim: %v, %v", cl, err)
		}
		return *cl
	}
	a, b := claimOne(), claimOne()
	var ids []uuid.UUID
	var last string
	for it, err := range s.Runtime.Changes(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		ids, last = append(ids, it.AttemptID), it.ETag
	}
	if len(ids) != 2 || ids[0] != a.Attempt.AttemptID || ids[1] != b.Attempt.AttemptID {
		t.Fatalf("feed %v", ids)
	}
	if _, err := s.Runtime.CompleteAttempt(ctx, a.Attempt.AttemptID, api.CompleteAttemptRequest{FencingToken: a.Lease.FencingToken, State: api.CompleteSucceeded}); err != nil {
		t.Fatal(err)
	}
	ids = nil
	for it, err := range s.Runtime.Changes(ctx, last) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.AttemptID)
	}
	if len(ids) != 1 || ids[0] != a.Attempt.AttemptID {
		t.Fatalf("feed after %s: %v", last, ids)
	}
}

// UpdateProject reads again and reapplies the change when another writer got there first.
func TestUpdateProjectRetriesAStaleETag(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	other := s.Admin
	rounds := 0
	p, err := s.Admin.UpdateProject(ctx, "p1", func(req *api.PutProjectRequest) error {
		rounds++
		if rounds == 1 {
			// Another admin changes the project between this read and its write.
			if _, err := other.UpdateProject(ctx, "p1", func(r *api.PutProjectRequest) error {
				r.RetentionDays = api.Ptr(30)
				return nil
			}); err != nil {
				return err
			}
		}
		req.Active = api.Ptr(false)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rounds != 2 || p.Active || p.RetentionDays != 30 {
		t.Fatalf("after %d rounds: %+v", rounds, p)
	}
	if _, _, err := s.Admin.PutProject(ctx, "p1", api.PutProjectRequest{}, ""); !errors.Is(err, client.ErrPreconditionRequired) {
		t.Fatalf("update without If-Match: %v", err)
	}

	r, err := s.Runtime.UpdateRelease(ctx, testRelease, testAdapter, func(req *api.PutReleaseRequest) error {
		req.State = api.Ptr(api.ReleaseDraining)
		return nil
	})
	if err != nil || r.State != api.ReleaseDraining {
		t.Fatalf("release %+v, %v", r, err)
	}
}

// ManifestOf computes the manifest hash the service computes.
func TestManifestOfAgreesWithTheService(t *testing.T) {
	t.Parallel()
	refs := []string{"oci://a@sha256:00", "quote\" back\\slash", "ctl\x01\x1f\t\n\r\b\f", "é ☃ 😀 \u2028\u2029", "<&>", ""}
	contentRefs, hash := client.ManifestOf(refs...)
	raw, err := json.Marshal(contentRefs)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := releases.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := releases.ManifestHash(canon); hash != want {
		t.Fatalf("hash %s, the service's %s (canonical %s)", hash, want, canon)
	}
	var back []string
	if err := json.Unmarshal(raw, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(refs) {
		t.Fatalf("contentRefs read back as %q, %v", back, err)
	}

	// Any JSON content, registered with the service.
	s := newServer(t, app.Config{})
	objects := []json.RawMessage{json.RawMessage(`{"z": 1.0, "a": [2e3, "x"], "é": null}`), json.RawMessage(`"oci://y"`)}
	h, err := client.ManifestHash(objects)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Runtime.PutRelease(context.Background(), "rel-objects", "1", api.PutReleaseRequest{
		ManifestHash: h, ContentRefs: objects, State: api.Ptr(api.ReleaseVerified)}, ""); err != nil {
		t.Fatalf("the service refused the hash: %v", err)
	}
	if _, err := client.ManifestHash([]json.RawMessage{json.RawMessage(`{"a":1,"a":2}`)}); err == nil {
		t.Fatal("duplicate member names have no canonical form")
	}
}

// The lists' filters for an absent value go over the wire as the server reads them: a
// queued run has no error (hasError=false), and false beside errorCode is invalid_request.
func TestListFiltersForAnAbsentValue(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	r := s.enqueue(t, "absent")
	for has, want := range map[bool]int{false: 1, true: 0} {
		page, err := s.Runtime.ListRuns(ctx, api.ListRunsParams{HasError: api.Ptr(has)})
		if err != nil || len(page.Items) != want || (want == 1 && page.Items[0].RunID != r.RunID) {
			t.Fatalf("hasError=%t: %v, %d runs, want %d", has, err, len(page.Items), want)
		}
	}
	if _, err := s.Runtime.ListRuns(ctx, api.ListRunsParams{HasError: api.Ptr(false), ErrorCode: api.Ptr("boom")}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("hasError=false with errorCode: %v", err)
	}
}

// TestListFiltersOfAList: a list parameter (the not* lists that link an insight's "other"
// group) goes as the parameter repeated, every item of it reaching the server.
func TestListFiltersOfAList(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	r := s.enqueue(t, "listed")
	for _, c := range []struct {
		not  []string
		want int
	}{{nil, 1}, {[]string{"other-agent"}, 1}, {[]string{"other-agent", r.AgentID}, 0}, {[]string{r.AgentID, "other-agent"}, 0}} {
		page, err := s.Runtime.ListRuns(ctx, api.ListRunsParams{NotAgentID: c.not, HasRelease: api.Ptr(false)})
		if err != nil || len(page.Items) != c.want {
			t.Fatalf("notAgentId=%v: %v, %d runs, want %d", c.not, err, len(page.Items), c.want)
		}
	}
	if _, err := s.Runtime.ListRuns(ctx, api.ListRunsParams{HasRelease: api.Ptr(false), ReleaseID: api.Ptr("r1")}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("hasRelease=false with releaseId: %v", err)
	}
}
