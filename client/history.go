package client

import (
	"context"
	"iter"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// FeedStart is the changedSince that starts the change feed at the beginning: it is older
// than every attempt's ETag.
const FeedStart = "0000000000000000"

// GetAttempt reads an attempt and its ETag (GET /v1/attempts/{attemptId}).
func (c *Client) GetAttempt(ctx context.Context, attemptID uuid.UUID) (api.Attempt, string, error) {
	var out api.Attempt
	res, err := c.do(ctx, call{op: "getAttempt", params: []string{attemptID.String()}, out: &out})
	return out, res.etag(), err
}

// ListAttempts reads one page of attempts (GET /v1/attempts): newest first with the
// filters, or the change feed when params.ChangedSince is set.
func (c *Client) ListAttempts(ctx context.Context, params api.ListAttemptsParams) (api.Page[api.AttemptItem], error) {
	return list[api.AttemptItem](ctx, c, "listAttempts", params)
}

// Attempts iterates over the attempts matching params, newest first.
func (c *Client) Attempts(ctx context.Context, params api.ListAttemptsParams) iter.Seq2[api.AttemptItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.AttemptItem], error) {
		params.Cursor = cursor
		return c.ListAttempts(ctx, params)
	})
}

// Changes iterates over the change feed: the attempts changed after since (an attempt's
// ETag, quoted or not; "" or FeedStart for the beginning), oldest change first, following
// nextCursor until the feed has caught up. Keep the last item's ETag and pass it as since
// to read the changes made after. An attempt that changes again appears again, later;
// purged attempts never appear.
func (c *Client) Changes(ctx context.Context, since string) iter.Seq2[api.AttemptItem, error] {
	if since == "" {
		since = FeedStart
	}
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.AttemptItem], error) {
		p := api.ListAttemptsParams{PageParams: api.PageParams{Limit: api.Ptr(api.MaxLimit), Cursor: cursor}}
		if cursor == nil {
			p.ChangedSince = &since
		}
		return c.ListAttempts(ctx, p)
	})
}

// Timeline reads one page of an attempt's timeline: its checkpoints, calls, decisions and
// delegations merged by time (GET /v1/attempts/{attemptId}/timeline).
func (c *Client) Timeline(ctx context.Context, attemptID uuid.UUID, params api.PageParams) (api.Page[api.TimelineEntry], error) {
	return list[api.TimelineEntry](ctx, c, "getAttemptTimeline", params, attemptID.String())
}

// TimelineEntries iterates over an attempt's whole timeline.
func (c *Client) TimelineEntries(ctx context.Context, attemptID uuid.UUID) iter.Seq2[api.TimelineEntry, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.TimelineEntry], error) {
		return c.Timeline(ctx, attemptID, api.PageParams{Cursor: cursor})
	})
}

// AttemptUsage sums what the attempt's calls reported (GET /v1/attempts/{attemptId}/usage).
func (c *Client) AttemptUsage(ctx context.Context, attemptID uuid.UUID) (api.UsageTotals, error) {
	var out api.UsageTotals
	_, err := c.do(ctx, call{op: "getAttemptUsage", params: []string{attemptID.String()}, out: &out})
	return out, err
}

// RunUsage sums what the calls of every attempt of the run reported (GET /v1/runs/{runId}/usage).
func (c *Client) RunUsage(ctx context.Context, runID uuid.UUID) (api.UsageTotals, error) {
	var out api.UsageTotals
	_, err := c.do(ctx, call{op: "getRunUsage", params: []string{runID.String()}, out: &out})
	return out, err
}
