package insights

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/web"
)

// windowDoc is what every insight route says of its window.
const windowDoc = " Over the window from..to (default: the last 24 hours; rounded out to bucket boundaries in UTC; at " +
	"most 500 buckets of 5m, 1h or 1d; from and to within 1678-01-01..2262-01-01 UTC), filtered by projectId, agentId, releaseId (a run's release is its latest " +
	"attempt's) and kind (the run's kind). Durations are summarised with percentiles from fixed histogram buckets " +
	"(10 ms to 1 day): a percentile is the upper bound of the bucket that holds it, or the largest duration seen when " +
	"that is smaller."

// freshnessDoc is what every insight route says of the roll-ups it reads.
const freshnessDoc = " Answers are read from roll-ups that a background projector maintains from the committed change " +
	"feed, so they may lag the latest writes (usually by about a second; the ledger_feed_lag_seconds metric shows " +
	"by how much): the " + WatermarkHeader + " header gives the time before which every committed change is " +
	"counted (absent until the roll-ups have first caught up). Rows purged by retention stay counted: a purge " +
	"does not change an answer about the past. A tenant has a few insight requests served at once; past that " +
	"the answer is 429 rate_limited with Retry-After, and a request that runs past its deadline is cancelled " +
	"with 503 database_unavailable and Retry-After."

// WatermarkHeader carries the roll-ups' watermark on every insight answer.
const WatermarkHeader = "Ledger-Insights-Through"

var watermarkHeaders = map[string]string{WatermarkHeader: "The time (RFC 3339, UTC, milliseconds) before which every " +
	"committed change is counted in this answer; later changes may not be yet. Absent until the roll-ups have first " +
	"caught up."}

const groupDoc = " groupBy names at most 50 groups, largest first; the rest are summed in one group marked other."

// Routes registers the insight routes (admin role, the key's tenant).
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	ad := []string{tenancy.RoleAdmin}
	grouped := func(id, path, summary, desc string, resp any, read groupedRead) {
		s.Route(http.MethodGet, path, web.Op{ID: id, Tag: "Insights", Summary: summary, Description: desc + windowDoc + groupDoc + freshnessDoc,
			Roles: ad, Query: api.InsightGroupedParams{}, Status: http.StatusOK, Response: resp, Headers: watermarkHeaders}, h.grouped(read))
	}
	grouped("insightRunsEnded", "/v1/insights/runs", "Runs ended per bucket, by outcome",
		"Counts the runs that ended in each bucket, one series per outcome.", api.InsightSeries{},
		func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.RunsEnded(ctx, t, w, f)
		})
	grouped("insightAttemptsEnded", "/v1/insights/attempts", "Attempts ended per bucket, by state",
		"Counts the attempts that ended in each bucket, one series per state (lost: taken back by the reaper; released: "+
			"given back by the holder).", api.InsightSeries{},
		func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.AttemptsEnded(ctx, t, w, f)
		})
	grouped("insightLeasesLost", "/v1/insights/leases-lost", "Leases lost per bucket",
		"Counts the attempts whose lease expired and was taken back by the reaper; group by agent or release to see "+
			"who loses them.", api.InsightSeries{},
		func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.LeasesLost(ctx, t, w, f)
		})
	grouped("insightAttemptsPerRun", "/v1/insights/attempts-per-run", "Attempts per finished run",
		"The distribution of the number of attempts of the runs that ended in the window (the last bin, 20, counts "+
			"20 or more).", api.AttemptsPerRun{},
		func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.AttemptsPerRun(ctx, t, w, f)
		})
	grouped("insightClaimLatency", "/v1/insights/claim-latency", "Time from enqueue to first claim",
		"For the runs enqueued in the window that have been claimed: the time from queuedAt to their first attempt's "+
			"start, p50 and p95.", api.ClaimLatency{},
		func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.ClaimLatency(ctx, t, w, f)
		})
	s.Route(http.MethodGet, "/v1/insights/calls", web.Op{ID: "insightCalls", Tag: "Insights", Summary: "Calls per target",
		Description: "The calls started in the window per target (at most 50 targets, most calls first, the rest " +
			"summed as other): count, failures (failed, denied, abandoned) and their rate, duration p50 and p95 of the " +
			"calls that ended." + windowDoc + freshnessDoc,
		Roles: ad, Query: api.InsightParams{}, Status: http.StatusOK, Response: api.CallInsights{}, Headers: watermarkHeaders},
		h.plain(func(ctx context.Context, t string, w Window, f Filter) (any, error) { return store.Calls(ctx, t, w, f) }))
	s.Route(http.MethodGet, "/v1/insights/usage", web.Op{ID: "insightUsage", Tag: "Insights",
		Summary: "Tokens and cost per bucket, by model, agent, release or project",
		Description: "Sums what the calls that finished in each bucket reported (usage and costMicros), one series each: " +
			"calls (that reported any), inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens, " +
			"reasoningOutputTokens, costMicros. groupBy model groups by the model a call named when it started." +
			windowDoc + groupDoc + freshnessDoc,
		Roles: ad, Query: api.InsightUsageParams{}, Status: http.StatusOK, Response: api.InsightSeries{}, Headers: watermarkHeaders},
		h.usage)
	s.Route(http.MethodGet, "/v1/insights/decisions", web.Op{ID: "insightDecisions", Tag: "Insights",
		Summary: "Decisions requested, answered and expired, by kind",
		Description: "The decisions requested in the window per decision kind: requested, answered (approved or " +
			"rejected), expired, cancelled, still pending, and the time to answer p50 and p95." + windowDoc + freshnessDoc,
		Roles: ad, Query: api.InsightParams{}, Status: http.StatusOK, Response: api.DecisionInsights{}, Headers: watermarkHeaders},
		h.plain(func(ctx context.Context, t string, w Window, f Filter) (any, error) {
			return store.Decisions(ctx, t, w, f)
		}))
}

type groupedRead func(ctx context.Context, tenantID string, w Window, f Filter) (any, error)

type handlers struct{ store *Store }

func (h handlers) grouped(read groupedRead) echo.HandlerFunc {
	return func(c echo.Context) error {
		var q api.InsightGroupedParams
		if err := web.BindQuery(c, &q); err != nil {
			return err
		}
		return h.answer(c, q.InsightParams, q.GroupBy, read)
	}
}

// usage answers GET /v1/insights/usage: grouped by model (the calls' Subkey) or by one of the
// dimensions the other insights group by.
func (h handlers) usage(c echo.Context) error {
	var q api.InsightUsageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	var group *api.InsightGroup
	byModel := q.GroupBy != nil && *q.GroupBy == api.UsageByModel
	if q.GroupBy != nil && !byModel {
		g := api.InsightGroup(*q.GroupBy) // agent, release and project are groupings of the other insights too
		group = &g
	}
	return h.answer(c, q.InsightParams, group, func(ctx context.Context, t string, w Window, f Filter) (any, error) {
		return h.store.Usage(ctx, t, w, f, byModel)
	})
}

func (h handlers) plain(read groupedRead) echo.HandlerFunc {
	return func(c echo.Context) error {
		var q api.InsightParams
		if err := web.BindQuery(c, &q); err != nil {
			return err
		}
		return h.answer(c, q, nil, read)
	}
}

func (h handlers) answer(c echo.Context, q api.InsightParams, group *api.InsightGroup, read groupedRead) error {
	tenant := tenancy.MustPrincipal(c).TenantID
	var out any
	err := admission.HeavyRead(c.Request().Context(), func(ctx context.Context) error {
		var err error
		out, err = h.store.Answer(ctx, tenant, q, group, read)
		if err != nil {
			return err
		}
		if at, ok, err := h.store.Watermark(ctx); err != nil {
			return err
		} else if ok {
			c.Response().Header().Set(WatermarkHeader, at.UTC().Format(sqldb.TimeLayout))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
