package insights_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

func insightStack(t *testing.T) *apitest.Stack {
	t.Helper()
	return apitest.New(t, apitest.Config{Epoch: epoch})
}

// TestInsightRoutesAnswerTheWindow: every insight route answers an admin with its window,
// defaulting to the last 24 hours in hourly buckets, and the counts of what happened (each
// exchange checked against the OpenAPI document).
func TestInsightRoutesAnswerTheWindow(t *testing.T) {
	t.Parallel()
	s := insightStack(t)
	ten := s.Tenant(t)
	l := s.Lease(t, ten.Runtime)
	apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/complete", ten.Runtime,
		`{"fencingToken":`+strconv.FormatInt(l.Token, 10)+`,"state":"succeeded"}`, nil), http.StatusOK)
	s.Clock.Advance(90 * time.Minute)

	// Before the projector has run, the answer counts nothing and carries no watermark.
	r := s.Do(t, http.MethodGet, "/v1/insights/runs?groupBy=project", ten.Admin, "", nil)
	apitest.WantStatus(t, r, http.StatusOK)
	if got := apitest.DecodeAs[api.InsightSeries](t, r); len(got.Groups) != 0 || r.Header.Get(insights.WatermarkHeader) != "" {
		t.Errorf("before projecting: groups %+v, watermark %q", got.Groups, r.Header.Get(insights.WatermarkHeader))
	}
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = s.Do(t, http.MethodGet, "/v1/insights/runs?groupBy=project", ten.Admin, "", nil)
	apitest.WantStatus(t, r, http.StatusOK)
	if got, want := r.Header.Get(insights.WatermarkHeader), epoch.Add(90*time.Minute).Format(sqldb.TimeLayout); got != want {
		t.Errorf("watermark %q, want the projector's catch-up time %q", got, want)
	}
	got := apitest.DecodeAs[api.InsightSeries](t, r)
	if got.Window.Bucket != api.Bucket1h || len(got.Buckets) != 25 || got.Window.GroupBy == nil || *got.Window.GroupBy != api.GroupProject {
		t.Errorf("window %+v, %d buckets", got.Window, len(got.Buckets))
	}
	// The run ended at the epoch, in the bucket 90 minutes before now's.
	if len(got.Groups) != 1 || got.Groups[0].Key != "p1" || got.Groups[0].Series[0].Name != "succeeded" ||
		got.Groups[0].Series[0].Counts[23] != 1 || got.Groups[0].Total != 1 {
		t.Errorf("groups %+v", got.Groups)
	}
	for _, path := range []string{"/v1/insights/attempts", "/v1/insights/leases-lost?groupBy=agent", "/v1/insights/attempts-per-run",
		"/v1/insights/claim-latency?bucket=5m", "/v1/insights/calls?bucket=1d", "/v1/insights/decisions?projectId=p1&kind=review"} {
		apitest.WantStatus(t, s.Do(t, http.MethodGet, path, ten.Admin, "", nil), http.StatusOK)
	}
	r = s.Do(t, http.MethodGet, "/v1/insights/attempts-per-run", ten.Admin, "", nil)
	per := apitest.DecodeAs[api.AttemptsPerRun](t, r)
	if want := []api.AttemptsPerRunBin{{Attempts: 1, Runs: 1}}; len(per.Groups) != 1 || !reflect.DeepEqual(per.Groups[0].Counts, want) {
		t.Errorf("attempts per run %+v", per.Groups)
	}
}

// TestInsightRoutesRefuse: a runtime key is forbidden; a bad bucket, grouping, window or
// parameter is a 400 naming the field.
func TestInsightRoutesRefuse(t *testing.T) {
	t.Parallel()
	s := insightStack(t)
	ten := s.Tenant(t)
	apitest.Want(t, s.Do(t, http.MethodGet, "/v1/insights/runs", ten.Runtime, "", nil), http.StatusForbidden, "forbidden")
	for path, field := range map[string]string{
		"/v1/insights/runs?bucket=2h":                                                "bucket",
		"/v1/insights/runs?groupBy=tenant":                                           "groupBy",
		"/v1/insights/attempts?from=2026-03-01T00:00:00Z&bucket=5m":                  "bucket",
		"/v1/insights/leases-lost?from=2026-04-02T00:00:00Z&to=2026-04-01T00:00:00Z": "to",
		"/v1/insights/calls?groupBy=agent":                                           "groupBy",
		"/v1/insights/decisions?agentId=a/b":                                         "agentId",
	} {
		r := s.Do(t, http.MethodGet, path, ten.Admin, "", nil)
		apitest.WantFields(t, r, field)
	}
}

// TestHeavyReadsAreCapped: past the tenant's cap of heavy reads in flight an insight is 429
// rate_limited with Retry-After, while another tenant's insight is served; one that runs
// past its deadline has its statement's context cancelled and answers 503
// database_unavailable with Retry-After.
func TestHeavyReadsAreCapped(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Epoch: epoch, App: app.Config{Limits: admission.Limits{HeavyReads: 1,
		HeavyReadTimeout: 300 * time.Millisecond}}})
	a, b := s.Tenant(t), s.Tenant(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var sawCancel error
	s.DB.SetStatementHook(func(ctx context.Context, _ *sqldb.Tx, st sqldb.Statement) error {
		if !strings.Contains(st.Query, "FROM InsightCells") || len(st.Args) == 0 || st.Args[0] != a.ID {
			return nil
		}
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			sawCancel = ctx.Err()
			return ctx.Err()
		}
	})
	first := make(chan apitest.Response, 1)
	go func() { first <- s.Do(t, http.MethodGet, "/v1/insights/runs", a.Admin, "", nil) }()
	<-entered
	r := s.Do(t, http.MethodGet, "/v1/insights/attempts", a.Admin, "", nil)
	apitest.Want(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	apitest.WantStatus(t, s.Do(t, http.MethodGet, "/v1/insights/attempts", b.Admin, "", nil), http.StatusOK)
	// The first read is past its deadline by now or soon: its statement sees the cancel.
	r = <-first
	apitest.Want(t, r, http.StatusServiceUnavailable, "database_unavailable")
	if r.Header.Get("Retry-After") == "" || !errors.Is(sawCancel, context.DeadlineExceeded) {
		t.Errorf("503 Retry-After %q, the statement saw %v", r.Header.Get("Retry-After"), sawCancel)
	}
	close(release)
	apitest.WantStatus(t, s.Do(t, http.MethodGet, "/v1/insights/attempts", a.Admin, "", nil), http.StatusOK)
}
