package client

import (
	"context"
	"iter"

	"github.com/ledger-dev/ledger/api"
)

// PutSchedule creates a schedule (ifMatch empty) or replaces it with the ETag it was read
// with (admin; PUT /v1/schedules/{scheduleId}), and returns it with its new ETag. As with
// PutProject, a create is not retried once it may have reached the service, and a retried
// update that is refused may have applied (ErrMaybeApplied).
func (c *Client) PutSchedule(ctx context.Context, scheduleID string, req api.PutScheduleRequest, ifMatch string) (api.Schedule, string, error) {
	var out api.Schedule
	res, err := c.do(ctx, call{op: "putSchedule", params: []string{scheduleID}, body: req, ifMatch: ifMatch, out: &out})
	return out, res.etag(), err
}

// GetSchedule reads a schedule (its next firing, newest firings with their runs, skip
// counts) and its ETag.
func (c *Client) GetSchedule(ctx context.Context, scheduleID string) (api.Schedule, string, error) {
	var out api.Schedule
	res, err := c.do(ctx, call{op: "getSchedule", params: []string{scheduleID}, out: &out})
	return out, res.etag(), err
}

// ListSchedules reads one page of the tenant's schedules, in id order.
func (c *Client) ListSchedules(ctx context.Context, params api.PageParams) (api.Page[api.ScheduleItem], error) {
	return list[api.ScheduleItem](ctx, c, "listSchedules", params)
}

// Schedules iterates over the tenant's schedules.
func (c *Client) Schedules(ctx context.Context) iter.Seq2[api.ScheduleItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.ScheduleItem], error) {
		return c.ListSchedules(ctx, api.PageParams{Cursor: cursor})
	})
}

// DeleteSchedule deletes a schedule (admin); the runs it fired stay. A retry whose earlier
// try may have deleted it and that finds it gone is ErrMaybeApplied wrapping the 404.
func (c *Client) DeleteSchedule(ctx context.Context, scheduleID string) error {
	_, err := c.do(ctx, call{op: "deleteSchedule", params: []string{scheduleID}})
	return err
}

// EnqueueBatch enqueues every item or none (POST /v1/runs/batch, at most api.MaxBatchItems):
// the answer has one item per request item, in order, an exact repeat of an earlier enqueue
// marked Existing. A refusal is a *Problem naming items[i].field. Like an enqueue without an
// idempotency key, a batch is not sent again once it may have reached the service (the
// retry table has one class per operation); a caller whose items all carry keys may repeat
// it, and gets the same runs back marked Existing.
func (c *Client) EnqueueBatch(ctx context.Context, items []api.EnqueueRequest) ([]api.BatchItem, error) {
	var out api.BatchEnqueueResponse
	_, err := c.do(ctx, call{op: "enqueueRunBatch", body: api.BatchEnqueueRequest{Items: items}, out: &out})
	return out.Items, err
}
