package client

import (
	"context"
	"errors"
	"iter"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// AppendCheckpoint appends a checkpoint under the lease (POST
// /v1/attempts/{attemptId}/checkpoints). A repeat of a sequence with the same hash answers
// the stored checkpoint (so it is retried); another hash is ErrSequenceConflict.
func (c *Client) AppendCheckpoint(ctx context.Context, attemptID uuid.UUID, req api.CheckpointRequest) (api.Checkpoint, error) {
	var out api.Checkpoint
	_, err := c.do(ctx, call{op: "appendCheckpoint", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// ListCheckpoints reads one page of an attempt's checkpoints in sequence order.
func (c *Client) ListCheckpoints(ctx context.Context, attemptID uuid.UUID, params api.PageParams) (api.Page[api.Checkpoint], error) {
	return list[api.Checkpoint](ctx, c, "listCheckpoints", params, attemptID.String())
}

// Checkpoints iterates over an attempt's checkpoints in sequence order.
func (c *Client) Checkpoints(ctx context.Context, attemptID uuid.UUID) iter.Seq2[api.Checkpoint, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.Checkpoint], error) {
		return c.ListCheckpoints(ctx, attemptID, api.PageParams{Cursor: cursor})
	})
}

// GetCheckpoint reads one checkpoint.
func (c *Client) GetCheckpoint(ctx context.Context, attemptID, checkpointID uuid.UUID) (api.Checkpoint, error) {
	var out api.Checkpoint
	_, err := c.do(ctx, call{op: "getCheckpoint", params: []string{attemptID.String(), checkpointID.String()}, out: &out})
	return out, err
}

// LastCheckpoint reads a run's last checkpoint, or when it has none that of the run it
// continues, back the chain (GET /v1/runs/{runId}/checkpoints/last). It returns nil and no
// error when the chain has no checkpoint, and ErrNotFound only when the run does not exist.
func (c *Client) LastCheckpoint(ctx context.Context, runID uuid.UUID) (*api.LastCheckpoint, error) {
	return c.lastCheckpoint(ctx, runID, false)
}

// lastCheckpoint is LastCheckpoint; runExists skips the read that tells a run without a
// checkpoint from no run (the service answers 404 to both).
func (c *Client) lastCheckpoint(ctx context.Context, runID uuid.UUID, runExists bool) (*api.LastCheckpoint, error) {
	var out api.LastCheckpoint
	_, err := c.do(ctx, call{op: "getLastCheckpoint", params: []string{runID.String()}, out: &out})
	if errors.Is(err, ErrNotFound) {
		if runExists {
			return nil, nil
		}
		if _, gerr := c.GetRun(ctx, runID); gerr == nil {
			return nil, nil
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RecordCall records a started call under the lease (POST /v1/attempts/{attemptId}/calls).
// A repeat of a sequence with the same requestHash answers the stored call (so it is
// retried); another requestHash is ErrSequenceConflict.
func (c *Client) RecordCall(ctx context.Context, attemptID uuid.UUID, req api.CallRequest) (api.Call, string, error) {
	var out api.Call
	res, err := c.do(ctx, call{op: "recordCall", params: []string{attemptID.String()}, body: req, out: &out})
	return out, res.etag(), err
}

// FinishCall finishes a call under the lease (PATCH /v1/attempts/{attemptId}/calls/{callId});
// ifMatch, when not empty, is sent as If-Match. A repeat of the same finish answers as
// stored (so it is retried); another finish of a finished call is ErrIllegalTransition.
func (c *Client) FinishCall(ctx context.Context, attemptID, callID uuid.UUID, req api.FinishCallRequest, ifMatch string) (api.Call, error) {
	var out api.Call
	_, err := c.do(ctx, call{op: "finishCall", params: []string{attemptID.String(), callID.String()}, body: req,
		ifMatch: ifMatch, out: &out})
	return out, err
}

// ListCalls reads one page of an attempt's calls in sequence order.
func (c *Client) ListCalls(ctx context.Context, attemptID uuid.UUID, params api.PageParams) (api.Page[api.Call], error) {
	return list[api.Call](ctx, c, "listCalls", params, attemptID.String())
}

// Calls iterates over an attempt's calls in sequence order.
func (c *Client) Calls(ctx context.Context, attemptID uuid.UUID) iter.Seq2[api.Call, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.Call], error) {
		return c.ListCalls(ctx, attemptID, api.PageParams{Cursor: cursor})
	})
}

// ListTenantCalls reads one page of the tenant's calls (GET /v1/calls): started in a
// window, newest start first, or with EndedFrom/EndedTo finished in one, newest end first
// (the rows the calls and usage insights count).
func (c *Client) ListTenantCalls(ctx context.Context, params api.ListTenantCallsParams) (api.Page[api.CallItem], error) {
	return list[api.CallItem](ctx, c, "listTenantCalls", params)
}

// TenantCalls iterates over the tenant's calls matching params, newest first.
func (c *Client) TenantCalls(ctx context.Context, params api.ListTenantCallsParams) iter.Seq2[api.CallItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.CallItem], error) {
		params.Cursor = cursor
		return c.ListTenantCalls(ctx, params)
	})
}

// GetCall reads one call and its ETag.
func (c *Client) GetCall(ctx context.Context, attemptID, callID uuid.UUID) (api.Call, string, error) {
	var out api.Call
	res, err := c.do(ctx, call{op: "getCall", params: []string{attemptID.String(), callID.String()}, out: &out})
	return out, res.etag(), err
}

// RequestDecision asks a person to decide, under the lease (POST
// /v1/attempts/{attemptId}/decisions). Without an idempotencyKey it is never sent again
// once it may have reached the service (a repeat would ask twice); with one, a repeat
// answers the same decision, so it is retried.
func (c *Client) RequestDecision(ctx context.Context, attemptID uuid.UUID, req api.DecisionRequest) (api.Decision, error) {
	var out api.Decision
	_, err := c.do(ctx, call{op: "requestDecision", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// ListAttemptDecisions reads one page of an attempt's decisions, oldest first.
func (c *Client) ListAttemptDecisions(ctx context.Context, attemptID uuid.UUID, params api.PageParams) (api.Page[api.DecisionItem], error) {
	return list[api.DecisionItem](ctx, c, "listAttemptDecisions", params, attemptID.String())
}

// ListDecisions reads one page of the decision inbox (admin; GET /v1/decisions), oldest
// request first.
func (c *Client) ListDecisions(ctx context.Context, params api.ListDecisionsParams) (api.Page[api.DecisionItem], error) {
	return list[api.DecisionItem](ctx, c, "listDecisions", params)
}

// Decisions iterates over the decision inbox (admin), oldest request first.
func (c *Client) Decisions(ctx context.Context, params api.ListDecisionsParams) iter.Seq2[api.DecisionItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.DecisionItem], error) {
		params.Cursor = cursor
		return c.ListDecisions(ctx, params)
	})
}

// GetDecision reads a decision and its ETag (GET /v1/decisions/{decisionId}).
func (c *Client) GetDecision(ctx context.Context, decisionID uuid.UUID) (api.Decision, string, error) {
	var out api.Decision
	res, err := c.do(ctx, call{op: "getDecision", params: []string{decisionID.String()}, out: &out})
	return out, res.etag(), err
}

// AnswerDecision answers a pending decision (admin; POST /v1/decisions/{decisionId}/answer)
// with the ETag it was read with (If-Match): ErrPreconditionFailed when it changed since,
// ErrDecisionClosed when it is no longer pending. It is retried; a retry refused either way
// after an earlier try may have reached the service also matches ErrMaybeApplied (read the
// decision to see how it closed). AnswerPending reads the ETag for you.
func (c *Client) AnswerDecision(ctx context.Context, decisionID uuid.UUID, etag string, req api.AnswerDecisionRequest) (api.Decision, error) {
	var out api.Decision
	_, err := c.do(ctx, call{op: "answerDecision", params: []string{decisionID.String()}, body: req,
		ifMatch: etag, out: &out})
	return out, err
}

// AnswerPending reads a decision and answers it with the ETag it read.
func (c *Client) AnswerPending(ctx context.Context, decisionID uuid.UUID, req api.AnswerDecisionRequest) (api.Decision, error) {
	_, etag, err := c.GetDecision(ctx, decisionID)
	if err != nil {
		return api.Decision{}, err
	}
	return c.AnswerDecision(ctx, decisionID, etag, req)
}

// Delegate enqueues a child run for a sub-agent and records the delegation under the lease
// (POST /v1/attempts/{attemptId}/delegations). A repeat of the child's idempotencyKey
// answers the existing delegation, so it is retried only when req.Child.IdempotencyKey is
// set.
func (c *Client) Delegate(ctx context.Context, attemptID uuid.UUID, req api.DelegationRequest) (api.Delegation, error) {
	var out api.Delegation
	_, err := c.do(ctx, call{op: "createDelegation", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}

// ListDelegations reads one page of an attempt's delegations, oldest first.
func (c *Client) ListDelegations(ctx context.Context, attemptID uuid.UUID, params api.PageParams) (api.Page[api.Delegation], error) {
	return list[api.Delegation](ctx, c, "listDelegations", params, attemptID.String())
}

// GetDelegation reads a delegation (its status follows the child run).
func (c *Client) GetDelegation(ctx context.Context, delegationID uuid.UUID) (api.Delegation, error) {
	var out api.Delegation
	_, err := c.do(ctx, call{op: "getDelegation", params: []string{delegationID.String()}, out: &out})
	return out, err
}

// ListRunDecisions reads one page of a run's decisions across its attempts and its
// continuation chain, oldest first (GET /v1/runs/{runId}/decisions).
func (c *Client) ListRunDecisions(ctx context.Context, runID uuid.UUID, params api.PageParams) (api.Page[api.DecisionItem], error) {
	return list[api.DecisionItem](ctx, c, "listRunDecisions", params, runID.String())
}

// ParkAttempt ends the attempt parked and queues its run waiting for the named decisions
// and children, or a time (POST /v1/attempts/{attemptId}/park). An exact repeat answers
// the parked attempt, so it is sent again after a failure.
func (c *Client) ParkAttempt(ctx context.Context, attemptID uuid.UUID, req api.ParkAttemptRequest) (api.Attempt, error) {
	var out api.Attempt
	_, err := c.do(ctx, call{op: "parkAttempt", params: []string{attemptID.String()}, body: req, out: &out})
	return out, err
}
