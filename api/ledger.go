package api

import (
	"encoding/json"

	"github.com/google/uuid"
)

// CheckpointRequest is the body of POST /v1/attempts/{attemptId}/checkpoints.
type CheckpointRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
	// Sequence is unique per attempt: a repeat with the same hash answers 200 with the
	// stored checkpoint, another hash is 409 sequence_conflict.
	Sequence           *int32  `json:"sequence" validate:"required,min=0,max=2147483647"`
	Phase              *Phase  `json:"phase" validate:"required"`
	AdapterStateRef    string  `json:"adapterStateRef" validate:"required,ident=512"`
	AdapterVersion     string  `json:"adapterVersion" validate:"required,segment=32"`
	Hash               string  `json:"hash" validate:"required,ident=128"`
	ContextSnapshotRef *string `json:"contextSnapshotRef,omitempty" validate:"omitempty,ident=512"`
}

// Checkpoint is a point an attempt can resume from. Checkpoints never change once written.
type Checkpoint struct {
	CheckpointID       uuid.UUID `json:"checkpointId"`
	AttemptID          uuid.UUID `json:"attemptId"`
	Sequence           int32     `json:"sequence"`
	Phase              Phase     `json:"phase"`
	AdapterStateRef    string    `json:"adapterStateRef"`
	AdapterVersion     string    `json:"adapterVersion"`
	ContextSnapshotRef *string   `json:"contextSnapshotRef,omitempty"`
	Hash               string    `json:"hash"`
	CreatedAt          Time      `json:"createdAt"`
}

// LastCheckpoint is a run's last checkpoint and the run that wrote it: the run asked about,
// or a run it continues.
type LastCheckpoint struct {
	Checkpoint
	RunID uuid.UUID `json:"runId"`
}

// CallRequest is the body of POST /v1/attempts/{attemptId}/calls.
type CallRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
	// Sequence is unique per attempt: a repeat with the same requestHash answers 200 with
	// the stored call, another requestHash is 409 sequence_conflict.
	Sequence         *int32     `json:"sequence" validate:"required,min=0,max=2147483647"`
	Kind             *CallKind  `json:"kind" validate:"required"`
	Target           string     `json:"target" validate:"required,ident=256"`
	RequestHash      string     `json:"requestHash" validate:"required,ident=128"`
	PolicyDecisionID *uuid.UUID `json:"policyDecisionId,omitempty"`
	// Model, Provider and Operation name a model call (OpenTelemetry's gen_ai.request.model,
	// gen_ai.provider.name and gen_ai.operation.name).
	Model     *string `json:"model,omitempty" validate:"omitempty,ident=128" doc:"The model the call asks for (gen_ai.request.model)."`
	Provider  *string `json:"provider,omitempty" validate:"omitempty,ident=64" doc:"The model's provider, e.g. openai, anthropic, aws.bedrock (gen_ai.provider.name)."`
	Operation *string `json:"operation,omitempty" validate:"omitempty,ident=32" doc:"What the call does (gen_ai.operation.name): chat, text_completion, generate_content, embeddings, execute_tool, create_agent, invoke_agent, or a name of the runtime's own."`
}

// Usage is what one model call used, as its provider reported it. Every count is optional
// and non-negative.
type Usage struct {
	InputTokens              *int64 `json:"inputTokens,omitempty" validate:"omitempty,min=0"`
	OutputTokens             *int64 `json:"outputTokens,omitempty" validate:"omitempty,min=0"`
	CacheReadInputTokens     *int64 `json:"cacheReadInputTokens,omitempty" validate:"omitempty,min=0" doc:"Input tokens served from the provider's cache."`
	CacheCreationInputTokens *int64 `json:"cacheCreationInputTokens,omitempty" validate:"omitempty,min=0" doc:"Input tokens written to the provider's cache."`
	ReasoningOutputTokens    *int64 `json:"reasoningOutputTokens,omitempty" validate:"omitempty,min=0"`
}

// FinishCallRequest is the body of PATCH /v1/attempts/{attemptId}/calls/{callId}.
type FinishCallRequest struct {
	FencingToken int64            `json:"fencingToken" validate:"required,min=1"`
	Status       CallFinishStatus `json:"status" validate:"required"`
	ReceiptRef   *string          `json:"receiptRef,omitempty" validate:"omitempty,ident=512"`
	// Usage, ResponseModel, FinishReasons and CostMicros are what a model call reports when
	// it ends; a repeat of the finish must report the same (409 illegal_transition otherwise).
	Usage         *Usage   `json:"usage,omitempty"`
	ResponseModel *string  `json:"responseModel,omitempty" validate:"omitempty,ident=128" doc:"The model that answered (gen_ai.response.model)."`
	FinishReasons []string `json:"finishReasons,omitempty" validate:"omitempty,max=8,dive,ident=32" doc:"Why the model stopped (gen_ai.response.finish_reasons), at most 8."`
	CostMicros    *int64   `json:"costMicros,omitempty" validate:"omitempty,min=0" doc:"What the call cost, in millionths of the tenant's currency unit; counted against the project's dailyCostBudgetMicros."`
}

// Call is a model, tool or HTTP call an attempt made.
type Call struct {
	CallID           uuid.UUID  `json:"callId"`
	AttemptID        uuid.UUID  `json:"attemptId"`
	Sequence         int32      `json:"sequence"`
	Kind             CallKind   `json:"kind"`
	Target           string     `json:"target"`
	RequestHash      string     `json:"requestHash"`
	PolicyDecisionID *uuid.UUID `json:"policyDecisionId" doc:"The policy decision that allowed the call, or null."`
	ReceiptRef       *string    `json:"receiptRef,omitempty"`
	Status           CallStatus `json:"status"`
	StartedAt        Time       `json:"startedAt"`
	EndedAt          *Time      `json:"endedAt,omitempty"`
	Model            *string    `json:"model,omitempty"`
	Provider         *string    `json:"provider,omitempty"`
	Operation        *string    `json:"operation,omitempty"`
	Usage            *Usage     `json:"usage,omitempty"`
	ResponseModel    *string    `json:"responseModel,omitempty"`
	FinishReasons    []string   `json:"finishReasons,omitempty"`
	CostMicros       *int64     `json:"costMicros,omitempty"`
}

// UsageTotals is what the calls of an attempt, or of every attempt of a run, used and cost:
// the sums of what their finishes reported (a count no call reported is 0).
type UsageTotals struct {
	// Calls counts the calls; Reported those whose finish reported usage or a cost.
	Calls                    int64 `json:"calls"`
	Reported                 int64 `json:"reported"`
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	ReasoningOutputTokens    int64 `json:"reasoningOutputTokens"`
	CostMicros               int64 `json:"costMicros"`
}

// DecisionRequest is the body of POST /v1/attempts/{attemptId}/decisions: a holder asks a
// person to decide.
type DecisionRequest struct {
	FencingToken int64         `json:"fencingToken" validate:"required,min=1"`
	Kind         *DecisionKind `json:"kind" validate:"required"`
	ProposalHash *string       `json:"proposalHash,omitempty" validate:"omitempty,ident=128"`
	// Options are what a choice decision chooses from (any JSON; an answer to a choice must
	// be one of them).
	Options          json.RawMessage `json:"options,omitempty" doc:"Any JSON value; for a choice, the array of options."`
	Recommendation   *string         `json:"recommendation,omitempty" validate:"omitempty,recommendation"`
	ExpiresInSeconds *int            `json:"expiresInSeconds,omitempty" validate:"omitempty,min=1,max=2592000" doc:"Closes the decision as expired that long after it is asked (default: never)."`
	// IdempotencyKey names the decision once per run: asked again (by any attempt of the run)
	// with the same request it answers the existing decision (200), pending or closed; with
	// another request, 409 idempotency_key_reused.
	IdempotencyKey *string `json:"idempotencyKey,omitempty" validate:"omitempty,ident=256"`
}

// AnswerDecisionRequest is the body of POST /v1/decisions/{decisionId}/answer.
type AnswerDecisionRequest struct {
	Status AnswerStatus `json:"status" validate:"required"`
	// Answer is the decision's answer (any JSON): one of the options of a choice, required
	// for an input.
	Answer     json.RawMessage `json:"answer,omitempty" doc:"Any JSON value."`
	ApprovalID *uuid.UUID      `json:"approvalId,omitempty"`
}

// Decision is a decision request and, once closed, how it closed.
type Decision struct {
	DecisionID uuid.UUID `json:"decisionId"`
	AttemptID  uuid.UUID `json:"attemptId"`
	// RunID, ProjectID, Subject and AgentID say whose decision it is: the attempt's run,
	// project and agent, and the run's subject (absent only while retention deletes the run).
	RunID          uuid.UUID       `json:"runId"`
	ProjectID      string          `json:"projectId"`
	Subject        *string         `json:"subject,omitempty"`
	AgentID        string          `json:"agentId"`
	Kind           DecisionKind    `json:"kind"`
	ApprovalID     *uuid.UUID      `json:"approvalId" doc:"The answer's approval id, or null."`
	ProposalHash   *string         `json:"proposalHash,omitempty"`
	Options        json.RawMessage `json:"options" doc:"Any JSON value (null when none was given)."`
	Recommendation *string         `json:"recommendation,omitempty"`
	// Status is the effective status: a pending decision whose expiresAt has passed reads
	// as expired.
	Status      DecisionStatus  `json:"status"`
	RequestedAt Time            `json:"requestedAt"`
	AnsweredAt  *Time           `json:"answeredAt,omitempty"`
	Answer      json.RawMessage `json:"answer" doc:"Any JSON value (null when none was given)."`
	AnsweredBy  *string         `json:"answeredBy,omitempty" doc:"The id of the key that answered."`
	ExpiresAt   *Time           `json:"expiresAt,omitempty"`
}

// ListDecisionsParams are the query parameters of GET /v1/decisions (the inbox).
type ListDecisionsParams struct {
	Status    *DecisionStatus `query:"status"`
	ProjectID *string         `query:"projectId" validate:"omitempty,ident=64" doc:"Only the decisions of this project's attempts."`
	// Kind, the requested window and the attempt's agent, release and run kind narrow to
	// what the decisions insight counts (its bars link with them).
	Kind          *DecisionKind `query:"kind" doc:"Only decisions of this kind."`
	RequestedFrom *Time         `query:"requestedFrom" doc:"Decisions requested at or after this time (as the decisions insight counts them)."`
	RequestedTo   *Time         `query:"requestedTo" doc:"Decisions requested before this time."`
	AgentID       *string       `query:"agentId" validate:"omitempty,segment=128" doc:"Only the decisions of this agent's attempts."`
	ReleaseID     *string       `query:"releaseId" validate:"omitempty,segment=256" doc:"Only the decisions of attempts that ran this release."`
	RunKind       *string       `query:"runKind" validate:"omitempty,ident=64" doc:"Only the decisions of runs of this kind."`
	PageParams
}

// DelegationRequest is the body of POST /v1/attempts/{attemptId}/delegations. The child's
// agent is child.agentId.
type DelegationRequest struct {
	FencingToken int64  `json:"fencingToken" validate:"required,min=1"`
	Purpose      string `json:"purpose" validate:"required,purpose"`
	// Child is the child run: an enqueue without parentRunId (its parent is the attempt's
	// run). A repeat of its idempotencyKey answers 200 with the existing delegation.
	Child RunSpec `json:"child" validate:"required"`
}

// Delegation is an attempt's delegation to a sub-agent's child run.
type Delegation struct {
	DelegationID uuid.UUID `json:"delegationId"`
	AttemptID    uuid.UUID `json:"attemptId"`
	ChildRunID   uuid.UUID `json:"childRunId"`
	ChildAgentID string    `json:"childAgentId"`
	Purpose      string    `json:"purpose"`
	// Depth is the child run's depth (the parent run's + 1).
	Depth int `json:"depth"`
	// Status follows the child run, or its newest continuation.
	Status    DelegationStatus `json:"status"`
	CreatedAt Time             `json:"createdAt"`
}

// CallItem is a call in the tenant's listing (GET /v1/calls), with its entity tag.
type CallItem struct {
	Call
	ETag string `json:"etag" doc:"The call's strong entity tag (as in its ETag header)."`
}

// ListTenantCallsParams are the query parameters of GET /v1/calls: the tenant's calls
// started in a window, newest start first, or, with endedFrom/endedTo, finished in one,
// newest end first; the filters are those the calls and usage insights group and narrow by.
type ListTenantCallsParams struct {
	StartedFrom *Time   `query:"startedFrom" doc:"Calls started at or after this time (as the calls insight counts them)."`
	StartedTo   *Time   `query:"startedTo" doc:"Calls started before this time."`
	EndedFrom   *Time   `query:"endedFrom" doc:"Calls finished at or after this time, newest end first (as the usage insight counts them); not with startedFrom or startedTo."`
	EndedTo     *Time   `query:"endedTo" doc:"Calls finished before this time, newest end first."`
	Target      *string `query:"target" validate:"omitempty,ident=256"`
	Model       *string `query:"model" validate:"omitempty,ident=128" doc:"Calls that named this model."`
	// HasModel names the calls without a model (false), which no model value can name.
	HasModel *bool `query:"hasModel" doc:"true: calls that named a model; false: calls that named none (the usage insight's \"(no model)\" row); not false with model."`
	// NotTarget and NotModel leave out the calls of the targets or models an insight names,
	// so that its "other" row links to exactly its calls; a call without a model is kept.
	NotTarget []string `query:"notTarget" validate:"omitempty,max=64,dive,ident=256" doc:"Calls of none of these targets (repeat the parameter, at most 64)."`
	NotModel  []string `query:"notModel" validate:"omitempty,max=64,dive,ident=128" doc:"Calls that named none of these models; calls without a model are kept (repeat the parameter, at most 64)."`
	// ReportedUsage keeps the calls whose finish reported a count or a cost above zero: the
	// calls the usage insight counts.
	ReportedUsage *bool   `query:"reportedUsage" doc:"true: only calls whose finish reported tokens or a cost above zero."`
	ProjectID     *string `query:"projectId" validate:"omitempty,segment=64" doc:"Calls of attempts in this project."`
	AgentID       *string `query:"agentId" validate:"omitempty,segment=128" doc:"Calls of attempts of this agent."`
	ReleaseID     *string `query:"releaseId" validate:"omitempty,segment=256" doc:"Calls of attempts that ran this release."`
	Kind          *string `query:"kind" validate:"omitempty,ident=64" doc:"Calls of runs of this kind."`
	PageParams
}
