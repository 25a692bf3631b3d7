package schedules_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// openFile opens (and migrates) the SQLite file path with its own connection pool, as a
// separate server process would.
func openFile(t *testing.T, path string, clock *dbtest.Clock) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	return db
}

func scheduleBody(cron, extra string) string {
	return fmt.Sprintf(`{"cron":%q,"run":{"subject":"triage","kind":"triage","projectId":"p1","agentId":"a1","stepId":%q,"snapshotId":%q}%s}`,
		cron, uuid.NewString(), uuid.NewString(), extra)
}

// TestTwoServersFireEachMinuteOnce: two servers, each with its own connection pool on one
// database file, run their schedulers side by side while the clock moves 10 minutes: a
// "* * * * *" schedule makes exactly 10 runs, one per minute. One server dies in the middle
// of a firing (after its run's insert, before its commit): nothing of that firing stays,
// and the other server fires that minute.
func TestTwoServersFireEachMinuteOnce(t *testing.T) {
	t.Parallel()
	clock := dbtest.NewClock(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "ledger.db")
	dbA, dbB := openFile(t, path, clock), openFile(t, path, clock)
	a := apitest.New(t, apitest.Config{DB: dbA})
	b := apitest.New(t, apitest.Config{DB: dbB})
	tn := a.NewTenant(t)
	put := a.Do(t, "PUT", "/v1/schedules/every-minute", tn.Admin, scheduleBody("* * * * *", `,"overlap":"allow"`), nil)
	apitest.WantStatus(t, put, http.StatusCreated)
	etag := put.Header.Get("ETag")

	var kill atomic.Bool
	killed := errors.New("process killed mid-firing")
	dbA.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		// The run is inserted; the firing's last statement never runs and nothing commits.
		if strings.HasPrefix(st.Query, "UPDATE ScheduleStates SET LastRunId") && kill.CompareAndSwap(true, false) {
			return killed
		}
		return nil
	})
	ctx := context.Background()
	for step := range 30 { // 20 s a step: 12:00:50 .. 12:10:30
		clock.Advance(20 * time.Second)
		if step == 13 { // 12:05:10: A dies in the firing of 12:05, then B runs alone
			kill.Store(true)
			if _, err := a.App.Scheduler.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if kill.Load() {
				t.Fatal("the kill never happened")
			}
			if r, err := b.App.Scheduler.Tick(ctx); err != nil || r.Fired != 1 {
				t.Fatalf("B after A died: %+v %v", r, err)
			}
			continue
		}
		var wg sync.WaitGroup
		for _, s := range []*apitest.Stack{a, b} {
			wg.Go(func() {
				if _, err := s.App.Scheduler.Tick(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	var sc api.Schedule
	got := b.Do(t, "GET", "/v1/schedules/every-minute", tn.Admin, "", nil)
	apitest.WantStatus(t, got, http.StatusOK)
	apitest.Decode(t, got, &sc)
	if sc.Fired != 10 || len(sc.LastFirings) != 10 || sc.SkippedCatchup != 0 || sc.SkippedOverlap != 0 {
		t.Fatalf("fired %d, firings %d, skipped %d/%d", sc.Fired, len(sc.LastFirings), sc.SkippedCatchup, sc.SkippedOverlap)
	}
	if got.Header.Get("ETag") != etag {
		t.Fatalf("firing moved the ETag: %s, was %s", got.Header.Get("ETag"), etag)
	}
	var page api.Page[api.Run]
	apitest.Decode(t, a.Do(t, "GET", "/v1/runs?limit=500", tn.Admin, "", nil), &page)
	if len(page.Items) != 10 {
		t.Fatalf("%d runs, want 10", len(page.Items))
	}
	keys := map[string]bool{}
	for _, r := range page.Items {
		keys[*r.IdempotencyKey] = true
	}
	for m := 1; m <= 10; m++ {
		if k := fmt.Sprintf("schedule:every-minute:2026-01-01T12:%02d:00.000Z", m); !keys[k] {
			t.Fatalf("no run for %s; keys %v", k, keys)
		}
	}
	for i, f := range sc.LastFirings {
		if want := time.Date(2026, 1, 1, 12, 10-i, 0, 0, time.UTC); !f.FireAt.Time.Equal(want) {
			t.Fatalf("firing %d at %s, want %s", i, f.FireAt.Time, want)
		}
	}
}

// TestHTTPSchedules: the routes' answers and refusals.
func TestHTTPSchedules(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)})
	tn := s.NewTenant(t)
	for _, c := range []struct {
		name, id, body string
		status         int
		code, field    string
	}{
		{"BadCron", "x", scheduleBody("61 * * * *", ""), 400, "invalid_request", "cron"},
		{"BadZone", "x", scheduleBody("* * * * *", `,"timezone":"Mars/Olympus"`), 400, "invalid_request", "timezone"},
		{"RunField", "x", strings.Replace(scheduleBody("* * * * *", ""), `"kind":"triage"`, `"kind":""`, 1), 400, "invalid_request", "run.kind"},
		{"RunKey", "x", strings.Replace(scheduleBody("* * * * *", ""), `"agentId"`, `"idempotencyKey":"k","agentId"`, 1), 400, "invalid_request", "run.idempotencyKey"},
		{"BadOverlap", "x", scheduleBody("* * * * *", `,"overlap":"sometimes"`), 400, "invalid_request", "overlap"},
		{"ColonInId", "a:b", scheduleBody("* * * * *", ""), 400, "invalid_request", "scheduleId"},
		{"UnknownProject", "x", strings.Replace(scheduleBody("* * * * *", ""), `"p1"`, `"nope"`, 1), 422, "unknown_project", ""},
	} {
		r := s.Do(t, "PUT", "/v1/schedules/"+c.id, tn.Admin, c.body, nil)
		if c.field != "" {
			apitest.WantFields(t, r, c.field)
		} else {
			apitest.Want(t, r, c.status, c.code)
		}
	}
	apitest.WantStatus(t, s.Do(t, "GET", "/v1/schedules/x", tn.Admin, "", nil), http.StatusNotFound)
	apitest.WantStatus(t, s.Do(t, "PUT", "/v1/schedules/x", tn.Runtime, scheduleBody("* * * * *", ""), nil), http.StatusForbidden)

	created := s.Do(t, "PUT", "/v1/schedules/nightly", tn.Admin, scheduleBody("0 2 * * *", `,"timezone":"Europe/Berlin","description":"evals"`), nil)
	apitest.WantStatus(t, created, http.StatusCreated)
	var sc api.Schedule
	apitest.Decode(t, created, &sc)
	if sc.NextFireAt == nil || !sc.NextFireAt.Time.Equal(time.Date(2026, 1, 2, 1, 0, 0, 0, time.UTC)) || sc.Overlap != api.OverlapSkip ||
		sc.CatchupSeconds != 60 || sc.Timezone != "Europe/Berlin" || len(sc.LastFirings) != 0 {
		t.Fatalf("created: %+v", sc)
	}
	apitest.Want(t, s.Do(t, "PUT", "/v1/schedules/nightly", tn.Admin, scheduleBody("0 3 * * *", ""), nil), 428, "precondition_required")
	upd := s.Do(t, "PUT", "/v1/schedules/nightly", tn.Admin, scheduleBody("0 3 * * *", `,"paused":true`),
		map[string]string{"If-Match": created.Header.Get("ETag")})
	apitest.WantStatus(t, upd, http.StatusOK)
	sc = api.Schedule{}
	apitest.Decode(t, upd, &sc)
	if !sc.Paused || sc.NextFireAt != nil || sc.Cron != "0 3 * * *" || sc.Timezone != "UTC" || sc.Description != nil {
		t.Fatalf("updated: %+v", sc)
	}
	apitest.Want(t, s.Do(t, "PUT", "/v1/schedules/nightly", tn.Admin, scheduleBody("0 3 * * *", ""),
		map[string]string{"If-Match": created.Header.Get("ETag")}), 412, "precondition_failed")
	apitest.WantStatus(t, s.Do(t, "PUT", "/v1/schedules/hourly", tn.Admin, scheduleBody("@hourly", ""), nil), http.StatusCreated)

	var page api.Page[api.ScheduleItem]
	apitest.Decode(t, s.Do(t, "GET", "/v1/schedules?limit=1", tn.Admin, "", nil), &page)
	if len(page.Items) != 1 || page.Items[0].ScheduleID != "hourly" || page.NextCursor == "" || page.Items[0].ETag == "" {
		t.Fatalf("first page: %+v", page)
	}
	apitest.Decode(t, s.Do(t, "GET", "/v1/schedules?limit=1&cursor="+page.NextCursor, tn.Admin, "", nil), &page)
	if len(page.Items) != 1 || page.Items[0].ScheduleID != "nightly" || page.Items[0].ETag != upd.Header.Get("ETag") {
		t.Fatalf("second page: %+v", page)
	}
	other := s.NewTenant(t)
	apitest.WantStatus(t, s.Do(t, "GET", "/v1/schedules/nightly", other.Admin, "", nil), http.StatusNotFound)
	apitest.WantStatus(t, s.Do(t, "DELETE", "/v1/schedules/nightly", other.Admin, "", nil), http.StatusNotFound)
	apitest.WantStatus(t, s.Do(t, "DELETE", "/v1/schedules/nightly", tn.Admin, "", nil), http.StatusNoContent)
	apitest.WantStatus(t, s.Do(t, "GET", "/v1/schedules/nightly", tn.Admin, "", nil), http.StatusNotFound)
}
