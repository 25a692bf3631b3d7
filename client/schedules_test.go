package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/app"
)

func scheduleRun() api.RunSpec {
	return api.RunSpec{Subject: "triage", Kind: "triage", ProjectID: "p1", AgentID: "a1", StepID: uuid.New(), SnapshotID: uuid.New()}
}

// TestSchedulesThroughTheSDK: a schedule put, fired, read, listed, replaced and deleted
// through the client.
func TestSchedulesThroughTheSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	sc, etag, err := s.Admin.PutSchedule(ctx, "triage", api.PutScheduleRequest{Cron: "*/15 * * * *", Run: scheduleRun(),
		Overlap: api.Ptr(api.OverlapAllow)}, "")
	if err != nil || etag == "" || sc.NextFireAt == nil {
		t.Fatalf("put: %+v %q %v", sc, etag, err)
	}
	s.Clock.Advance(sc.NextFireAt.Sub(s.Clock.Now()))
	if r, err := s.App.Scheduler.Tick(ctx); err != nil || r.Fired != 1 {
		t.Fatalf("tick: %+v %v", r, err)
	}
	got, etag2, err := s.Admin.GetSchedule(ctx, "triage")
	if err != nil || etag2 != etag || got.Fired != 1 || len(got.LastFirings) != 1 || !got.LastFirings[0].FireAt.Equal(sc.NextFireAt.Time) {
		t.Fatalf("get: %+v %q %v", got, etag2, err)
	}
	if _, _, err := s.Admin.PutSchedule(ctx, "triage", api.PutScheduleRequest{Cron: "bad", Run: scheduleRun()}, etag); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("bad cron: %v", err)
	}
	if _, _, err := s.Admin.PutSchedule(ctx, "triage", api.PutScheduleRequest{Cron: "@daily", Run: scheduleRun(), Paused: api.Ptr(true)}, etag); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it, err := range s.Admin.Schedules(ctx) {
		if err != nil || it.ScheduleID != "triage" || !it.Paused || it.ETag == etag {
			t.Fatalf("list: %+v %v", it, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d schedules listed", n)
	}
	if err := s.Admin.DeleteSchedule(ctx, "triage"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Admin.GetSchedule(ctx, "triage"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestEnqueueBatchThroughTheSDK: all or nothing, repeats marked existing, refusals naming
// the item.
func TestEnqueueBatchThroughTheSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t, app.Config{})
	ctx := context.Background()
	item := func(key string) api.EnqueueRequest {
		spec := scheduleRun()
		spec.Subject, spec.IdempotencyKey = "batch:"+key, api.Ptr(key)
		return api.EnqueueRequest{RunSpec: spec}
	}
	a, b := item("a"), item("b")
	items, err := s.Runtime.EnqueueBatch(ctx, []api.EnqueueRequest{a, b})
	if err != nil || len(items) != 2 || items[0].Existing || items[1].Run.Subject != "batch:b" {
		t.Fatalf("batch: %+v %v", items, err)
	}
	again, err := s.Runtime.EnqueueBatch(ctx, []api.EnqueueRequest{a})
	if err != nil || !again[0].Existing || again[0].Run.RunID != items[0].Run.RunID {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	bad := item("c")
	bad.ProjectID = "nope"
	_, err = s.Runtime.EnqueueBatch(ctx, []api.EnqueueRequest{item("d"), bad})
	var p *client.Problem
	if !errors.As(err, &p) || p.Code != api.CodeUnknownProject || len(p.Errors) != 1 || p.Errors[0].Field != "items[1].projectId" {
		t.Fatalf("refusal: %v", err)
	}
	page, err := s.Admin.ListRuns(ctx, api.ListRunsParams{Subject: api.Ptr("batch:d")})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("a refused batch stored %d runs (%v)", len(page.Items), err)
	}
}
