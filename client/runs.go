package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// EnqueueRun queues a run (POST /v1/runs). A repeat of the same request under the same
// idempotencyKey answers the existing run; the same key with another request is
// ErrIdempotencyKeyReused. Retried only when the request carries an idempotencyKey: without
// one a lost answer could mean a run queued twice.
func (c *Client) EnqueueRun(ctx context.Context, req api.EnqueueRequest) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, call{op: "enqueueRun", body: req, out: &out})
	return out, err
}

// ErrClaimHeld matches a *HeldError: a claim answered 204 with Retry-After.
var ErrClaimHeld = errors.New("ledger: claim held")

// HeldError is a claim the service held back (204 with Retry-After): the tenant's budget
// of leased runs is spent, or too many of its claims are waiting. Claim again after
// RetryAfter.
type HeldError struct{ RetryAfter time.Duration }

// Error says how long to wait.
func (e *HeldError) Error() string {
	return fmt.Sprintf("ledger: claim held: retry after %s", e.RetryAfter)
}

// Is matches ErrClaimHeld.
func (e *HeldError) Is(target error) bool { return target == ErrClaimHeld }

// ClaimRun leases one due run and starts its attempt (POST /v1/runs/claim), waiting up to
// req.WaitSeconds for one. It returns nil and no error when nothing is due, and a *HeldError
// when the service held the claim back (claim again after its RetryAfter). A claim is never
// sent again once it may have reached the service: a lost answer may hold a lease, which
// then passes and is taken back by the reaper. Use a Worker rather than claiming by hand.
func (c *Client) ClaimRun(ctx context.Context, req api.ClaimRequest) (*api.Claim, error) {
	var out api.Claim
	res, err := c.do(ctx, call{op: "claimRun", body: req, out: &out})
	if err != nil {
		return nil, err
	}
	if res.status == http.StatusNoContent {
		if ra := retryAfter(res.header); ra > 0 {
			return nil, &HeldError{RetryAfter: ra}
		}
		return nil, nil
	}
	return &out, nil
}

// GetRun reads a run (GET /v1/runs/{runId}).
func (c *Client) GetRun(ctx context.Context, runID uuid.UUID) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, call{op: "getRun", params: []string{runID.String()}, out: &out})
	return out, err
}

// ListRuns reads one page of the tenant's runs, newest first (GET /v1/runs).
func (c *Client) ListRuns(ctx context.Context, params api.ListRunsParams) (api.Page[api.RunItem], error) {
	return list[api.RunItem](ctx, c, "listRuns", params)
}

// Runs iterates over the tenant's runs matching params, newest first, following the pages.
func (c *Client) Runs(ctx context.Context, params api.ListRunsParams) iter.Seq2[api.RunItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.RunItem], error) {
		params.Cursor = cursor
		return c.ListRuns(ctx, params)
	})
}

// CancelRun cancels a run (admin; POST /v1/runs/{runId}/cancel): a queued run ends
// cancelled at once, a leased one is asked to stop (its holder sees cancelRequested on its
// next heartbeat). Idempotent, so retried.
func (c *Client) CancelRun(ctx context.Context, runID uuid.UUID) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, call{op: "cancelRun", params: []string{runID.String()}, out: &out})
	return out, err
}

// ContinueRun continues an ended run on a new run (POST /v1/runs/{runId}/continue; req may
// be nil). A repeat answers the existing continuation, so it is retried.
func (c *Client) ContinueRun(ctx context.Context, runID uuid.UUID, req *api.ContinueRequest) (api.Run, error) {
	var out api.Run
	cl := call{op: "continueRun", params: []string{runID.String()}, out: &out}
	if req != nil {
		cl.body = req
	}
	_, err := c.do(ctx, cl)
	return out, err
}

// ForkRun starts a new run from a checkpoint of a run (POST /v1/runs/{runId}/fork): it has
// the run's spec and resumes from that checkpoint (Lease.Resume) until it writes its own.
// Retried only with an idempotency key, which makes a repeat answer the same fork.
func (c *Client) ForkRun(ctx context.Context, runID uuid.UUID, req api.ForkRequest) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, call{op: "forkRun", params: []string{runID.String()}, body: req, out: &out})
	return out, err
}

// BulkRuns cancels or continues many runs (POST /v1/runs/bulk, admin): it answers the
// operation, which the service works through in batches (GetOperation shows its progress),
// or with DryRun the number of runs matched. Retried only with an idempotency key.
func (c *Client) BulkRuns(ctx context.Context, req api.BulkRunsRequest) (api.Operation, error) {
	var out api.Operation
	_, err := c.do(ctx, call{op: "bulkRuns", body: req, out: &out})
	return out, err
}

// GetOperation reads a bulk operation's progress (GET /v1/operations/{operationId}).
func (c *Client) GetOperation(ctx context.Context, operationID uuid.UUID) (api.Operation, error) {
	var out api.Operation
	_, err := c.do(ctx, call{op: "getOperation", params: []string{operationID.String()}, out: &out})
	return out, err
}

// Heartbeat renews a lease (POST /v1/attempts/{attemptId}/heartbeat) and says whether a
// cancel is pending. A repeat only renews again, so it is retried.
func (c *Client) Heartbeat(ctx context.Context, attemptID uuid.UUID, req api.HeartbeatRequest) (api.Heartbeat, error) {
	var out api.Heartbeat
	_, err := c.do(ctx, call{op: "heartbeatAttempt", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// ReleaseAttempt gives a leased run back (POST /v1/attempts/{attemptId}/release). A repeat
// of a release that applied answers as the first did, so it is retried.
func (c *Client) ReleaseAttempt(ctx context.Context, attemptID uuid.UUID, req api.ReleaseAttemptRequest) (api.Attempt, error) {
	var out api.Attempt
	_, err := c.do(ctx, call{op: "releaseAttempt", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// CompleteAttempt ends an attempt and its run (POST /v1/attempts/{attemptId}/complete). An
// exact repeat answers as the first did, so it is retried.
func (c *Client) CompleteAttempt(ctx context.Context, attemptID uuid.UUID, req api.CompleteAttemptRequest) (api.Attempt, error) {
	var out api.Attempt
	_, err := c.do(ctx, call{op: "completeAttempt", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// PatchAttempt changes an attempt's phase, counts a correction or records its context
// snapshot (PATCH /v1/attempts/{attemptId}). Retried unless it counts a correction, which a
// repeat would count twice.
func (c *Client) PatchAttempt(ctx context.Context, attemptID uuid.UUID, req api.PatchAttemptRequest) (api.Attempt, error) {
	var out api.Attempt
	_, err := c.do(ctx, call{op: "patchAttempt", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// ObserveCancellation records that the holder saw its run's cancel request (POST
// /v1/attempts/{attemptId}/cancellation); ErrNoCancelRequested when none is pending. It is
// recorded once, so it is retried.
func (c *Client) ObserveCancellation(ctx context.Context, attemptID uuid.UUID, req api.FencedRequest) (api.Attempt, error) {
	var out api.Attempt
	_, err := c.do(ctx, call{op: "acknowledgeCancellation", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// AcquireLock takes, or renews for the same holder, a task run lock (PUT
// /v1/locks/agents/{agentId}/tasks/{taskId}); ErrLockHeld (with the Problem's HeldUntil)
// while another holder has it. Retried: a repeat renews.
func (c *Client) AcquireLock(ctx context.Context, agentID, taskID string, req api.LockRequest) (api.TaskLock, error) {
	var out api.TaskLock
	_, err := c.do(ctx, call{op: "acquireTaskLock", params: []string{agentID, taskID}, body: req, out: &out})
	return out, err
}

// ReleaseLock releases a task run lock held by holderID (DELETE …?holderId=); ErrLockHeld
// when another holder has it. Retried: releasing a free lock answers as releasing it did.
func (c *Client) ReleaseLock(ctx context.Context, agentID, taskID, holderID string) error {
	_, err := c.do(ctx, call{op: "releaseTaskLock", params: []string{agentID, taskID},
		query: queryOf(api.ReleaseLockParams{HolderID: holderID})})
	return err
}
