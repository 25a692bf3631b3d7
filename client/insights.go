package client

import (
	"context"

	"github.com/ledger-dev/ledger/api"
)

// Insights (admin; DESIGN.md section 5a): aggregate history over a bounded window. Every
// method takes the window (from, to, bucket; zero values: the last 24 hours in hourly
// buckets) and the filters; the grouped ones take a grouping too. They are reads, retried
// like every GET.

func (c *Client) insight(ctx context.Context, op string, params any, out any) error {
	_, err := c.do(ctx, call{op: op, query: queryOf(params), out: out})
	return err
}

// InsightRunsEnded counts the runs ended per bucket by outcome (GET /v1/insights/runs).
func (c *Client) InsightRunsEnded(ctx context.Context, params api.InsightGroupedParams) (api.InsightSeries, error) {
	var out api.InsightSeries
	return out, c.insight(ctx, "insightRunsEnded", params, &out)
}

// InsightAttemptsEnded counts the attempts ended per bucket by state, lost and released
// apart (GET /v1/insights/attempts).
func (c *Client) InsightAttemptsEnded(ctx context.Context, params api.InsightGroupedParams) (api.InsightSeries, error) {
	var out api.InsightSeries
	return out, c.insight(ctx, "insightAttemptsEnded", params, &out)
}

// InsightLeasesLost counts the leases the reaper took back per bucket; group by agent or
// release (GET /v1/insights/leases-lost).
func (c *Client) InsightLeasesLost(ctx context.Context, params api.InsightGroupedParams) (api.InsightSeries, error) {
	var out api.InsightSeries
	return out, c.insight(ctx, "insightLeasesLost", params, &out)
}

// InsightAttemptsPerRun is the distribution of attempts per run ended in the window (GET
// /v1/insights/attempts-per-run).
func (c *Client) InsightAttemptsPerRun(ctx context.Context, params api.InsightGroupedParams) (api.AttemptsPerRun, error) {
	var out api.AttemptsPerRun
	return out, c.insight(ctx, "insightAttemptsPerRun", params, &out)
}

// InsightClaimLatency summarises the time from enqueue to first claim (GET
// /v1/insights/claim-latency).
func (c *Client) InsightClaimLatency(ctx context.Context, params api.InsightGroupedParams) (api.ClaimLatency, error) {
	var out api.ClaimLatency
	return out, c.insight(ctx, "insightClaimLatency", params, &out)
}

// InsightCalls summarises the calls per target: count, failure rate, duration p50 and p95
// (GET /v1/insights/calls).
func (c *Client) InsightCalls(ctx context.Context, params api.InsightParams) (api.CallInsights, error) {
	var out api.CallInsights
	return out, c.insight(ctx, "insightCalls", params, &out)
}

// InsightDecisions summarises the decisions per kind: requested, answered, expired, time to
// answer (GET /v1/insights/decisions).
func (c *Client) InsightDecisions(ctx context.Context, params api.InsightParams) (api.DecisionInsights, error) {
	var out api.DecisionInsights
	return out, c.insight(ctx, "insightDecisions", params, &out)
}

// InsightUsage sums the tokens and cost the calls reported, per bucket, grouped by model,
// agent, release or project (GET /v1/insights/usage).
func (c *Client) InsightUsage(ctx context.Context, params api.InsightUsageParams) (api.InsightSeries, error) {
	var out api.InsightSeries
	return out, c.insight(ctx, "insightUsage", params, &out)
}
