package api

import (
	"encoding/json"

	"github.com/google/uuid"
)

// RunSpec is what defines a run: the body of an enqueue without its parent, and the child
// of a delegation (whose parent is the delegating attempt's run).
type RunSpec struct {
	// Subject serialises runs: at most one run of a subject is leased at a time, and runs of
	// one subject are offered in queue order, across all projects of the tenant.
	Subject       string    `json:"subject" validate:"required,ident=256"`
	Kind          string    `json:"kind" validate:"required,ident=64"`
	ProjectID     string    `json:"projectId" validate:"required,segment=64" doc:"An existing project of the tenant (else 422 unknown_project)."`
	AgentID       string    `json:"agentId" validate:"required,segment=128"`
	StepID        uuid.UUID `json:"stepId" validate:"required"`
	SnapshotID    uuid.UUID `json:"snapshotId" validate:"required"`
	EnvironmentID *string   `json:"environmentId,omitempty" validate:"omitempty,ident=64"`
	Band          *Band     `json:"band,omitempty" default:"batch"`
	// Input is the run's input, any JSON document.
	Input          json.RawMessage `json:"input,omitempty" doc:"The run's input: any JSON value."`
	MaxAttempts    *int            `json:"maxAttempts,omitempty" validate:"omitempty,min=1,max=1000" default:"3"`
	MaxCorrections *int            `json:"maxCorrections,omitempty" validate:"omitempty,min=0,max=1000" default:"3"`
	DueAt          *Time           `json:"dueAt,omitempty" doc:"When the run becomes due (default: now)."`
	DeadlineAt     *Time           `json:"deadlineAt,omitempty" doc:"After dueAt and in the future; a run not ended by then ends with outcome deadline."`
	// IdempotencyKey names the run once per tenant: a repeat of the same request answers
	// 200 with the run, another request under the key is 409 idempotency_key_reused.
	IdempotencyKey *string `json:"idempotencyKey,omitempty" validate:"omitempty,ident=256"`
	// Tags label the run for the runs list's tag filter (at most 16 identifiers, kept in
	// the order given).
	Tags []string `json:"tags,omitempty" validate:"omitempty,max=16,dive,ident=64"`
	// Metadata is any JSON the enqueuer keeps with the run (at most 4 KiB compacted).
	Metadata json.RawMessage `json:"metadata,omitempty" doc:"Any JSON value, at most 4096 bytes compacted (else 400 naming metadata)."`
	RunExtras
}

// RunExtras are the optional members an enqueue gives that the run keeps as given, answers
// with, and hands on to its continuation. Such a member is declared once, here: RunSpec and
// Run embed it, internal/runs' Spec and Run embed it, and the column of Runs that keeps it
// (named by the db tag) is one entry of internal/runs' column table (columns.go). Each must
// be omitempty: an absent member leaves the request hash of an idempotency key as it was
// before the member existed. docs/contributors.md, "Adding a field to a run", has the recipe.
type RunExtras struct {
	// TraceParent is the caller's W3C trace context (version 00): the run chain's exported
	// trace joins it. A request's traceparent header is taken when the body has none. It is
	// not part of what an idempotency key compares (a retry may carry a new one).
	TraceParent *string `json:"traceparent,omitempty" db:"TraceParent" validate:"omitempty,max=55" doc:"W3C Trace Context traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>): the run's exported spans join this trace. An enqueue without one takes the request's traceparent header. Not compared by idempotencyKey."`
}

// MaxMetadataBytes bounds a run's metadata (compacted JSON).
const MaxMetadataBytes = 4096

// EnqueueRequest is the body of POST /v1/runs.
type EnqueueRequest struct {
	RunSpec
	// ParentRunID makes the run a child of a run of the tenant (Depth = the parent's + 1).
	ParentRunID *uuid.UUID `json:"parentRunId,omitempty"`
}

// Run is the lease of one piece of agent work on one subject.
type Run struct {
	RunID         uuid.UUID       `json:"runId"`
	ProjectID     string          `json:"projectId"`
	EnvironmentID *string         `json:"environmentId,omitempty"`
	Subject       string          `json:"subject"`
	Kind          string          `json:"kind"`
	AgentID       string          `json:"agentId"`
	StepID        uuid.UUID       `json:"stepId"`
	SnapshotID    uuid.UUID       `json:"snapshotId"`
	Input         json.RawMessage `json:"input" doc:"The run's input (any JSON value; null when none was given)."`
	Band          Band            `json:"band"`
	State         RunState        `json:"state"`
	// Epoch is the fencing token of the run's newest lease.
	Epoch        int64   `json:"epoch"`
	HolderID     *string `json:"holderId,omitempty"`
	LeaseSeconds *int    `json:"leaseSeconds,omitempty"`
	LeasedUntil  *Time   `json:"leasedUntil,omitempty"`
	// AttemptsSpent is how many of MaxAttempts the run has spent: a charged release or a
	// lost lease spends one, a completion none; a continuation starts one past its
	// predecessor's count.
	AttemptsSpent      int         `json:"attemptsSpent"`
	MaxAttempts        int         `json:"maxAttempts"`
	MaxCorrections     int         `json:"maxCorrections"`
	QueuedAt           Time        `json:"queuedAt"`
	DueAt              Time        `json:"dueAt"`
	DeadlineAt         *Time       `json:"deadlineAt,omitempty"`
	EndedAt            *Time       `json:"endedAt,omitempty"`
	Outcome            *RunOutcome `json:"outcome,omitempty"`
	ErrorCode          *string     `json:"errorCode,omitempty"`
	ErrorMessage       *string     `json:"errorMessage,omitempty"`
	CancelRequestedAt  *Time       `json:"cancelRequestedAt,omitempty"`
	IdempotencyKey     *string     `json:"idempotencyKey,omitempty"`
	ParentRunID        *uuid.UUID  `json:"parentRunId" doc:"The parent run, or null for a root run."`
	Depth              int         `json:"depth"`
	ContinuedFromRunID *uuid.UUID  `json:"continuedFromRunId" doc:"The ended run this one continues, or null."`
	// CreatedBy is the id of the key that enqueued the run.
	CreatedBy string `json:"createdBy"`
	// Purged marks the stand-in for a run that retention deleted, answered to a repeat of
	// its idempotency key.
	Purged   bool            `json:"purged,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty" doc:"The metadata given at enqueue (any JSON value)."`
	// ForkedFromCheckpointID is the checkpoint of another run this run was forked from: its
	// resume point (checkpoints/last) until it writes one of its own.
	ForkedFromCheckpointID *uuid.UUID `json:"forkedFromCheckpointId,omitempty"`
	RunExtras
}

// ForkRequest is the body of POST /v1/runs/{runId}/fork.
type ForkRequest struct {
	// CheckpointID is a checkpoint of one of the run's attempts: the new run resumes from it.
	CheckpointID uuid.UUID `json:"checkpointId" validate:"required"`
	DueAt        *Time     `json:"dueAt,omitempty" doc:"When the fork becomes due (default: now)."`
	// IdempotencyKey names the fork once per tenant, as an enqueue's does.
	IdempotencyKey *string `json:"idempotencyKey,omitempty" validate:"omitempty,ident=256"`
}

// RunItem is a run in a listing, with its entity tag (as in the run's ETag header).
type RunItem struct {
	Run
	ETag string `json:"etag" doc:"The run's strong entity tag (as in its ETag header)."`
}

// AttemptError is the error an attempt ended with: what a complete or a release reported,
// or lease_lost when the reaper took its lease back. The run's errorCode and errorMessage
// take a copy when the attempt ends it.
type AttemptError struct {
	Code string `json:"code" validate:"required,errcode"`
	// Message is for a person (at most MaxErrorMessage characters; no control characters other than
	// tab and line breaks).
	Message string `json:"message,omitempty" validate:"omitempty,errormessage"`
	// Details is any JSON (a stack, the failing input), at most 16 KiB compacted.
	Details json.RawMessage `json:"details,omitempty" doc:"Any JSON value, at most 16384 bytes compacted (else 400 naming error.details)."`
}

// MaxErrorDetailsBytes bounds an error's details (compacted JSON).
const MaxErrorDetailsBytes = 16384

// ClaimRequest is the body of POST /v1/runs/claim.
type ClaimRequest struct {
	HolderID       string `json:"holderId" validate:"required,ident=128"`
	ReleaseID      string `json:"releaseId" validate:"required,segment=256" doc:"An active release of the tenant (else 422 release_not_active)."`
	AdapterVersion string `json:"adapterVersion" validate:"required,segment=32"`
	ModelProfileID string `json:"modelProfileId" validate:"required,ident=128"`
	LeaseSeconds   *int   `json:"leaseSeconds,omitempty" validate:"omitempty,min=1,max=3600" doc:"The lease's length (default: the server's LEDGER_LEASE_TTL, 30 s unless configured)."`
	WaitSeconds    *int   `json:"waitSeconds,omitempty" validate:"omitempty,min=0,max=30" default:"0" doc:"How long to wait for a due run before answering 204."`
	// Kinds, AgentIDs and ProjectIDs, when given, offer only runs that match one of them.
	Kinds      []string `json:"kinds,omitempty" validate:"omitempty,max=100,dive,ident=64"`
	AgentIDs   []string `json:"agentIds,omitempty" validate:"omitempty,max=100,dive,segment=128"`
	ProjectIDs []string `json:"projectIds,omitempty" validate:"omitempty,max=100,dive,segment=64"`
}

// Claim is the answer to a claim: the leased run, its new attempt and the lease.
type Claim struct {
	Run     Run     `json:"run"`
	Attempt Attempt `json:"attempt"`
	Lease   Lease   `json:"lease"`
}

// Lease is what a claim hands the holder: every write it makes presents FencingToken.
type Lease struct {
	LeaseID      uuid.UUID `json:"leaseId"`
	FencingToken int64     `json:"fencingToken"`
	LeasedUntil  Time      `json:"leasedUntil"`
}

// ContinueRequest is the optional body of POST /v1/runs/{runId}/continue.
type ContinueRequest struct {
	DueAt      *Time      `json:"dueAt,omitempty" doc:"When the continuation becomes due (default: now)."`
	SnapshotID *uuid.UUID `json:"snapshotId,omitempty" doc:"The continuation's snapshot (default: the ended run's)."`
}

// Attempt is one execution attempt of a run: one claim's lease and what it did.
type Attempt struct {
	AttemptID              uuid.UUID    `json:"attemptId"`
	RunID                  uuid.UUID    `json:"runId"`
	StepID                 uuid.UUID    `json:"stepId"`
	ProjectID              string       `json:"projectId"`
	EnvironmentID          *string      `json:"environmentId,omitempty"`
	LeaseID                uuid.UUID    `json:"leaseId"`
	FencingToken           int64        `json:"fencingToken"`
	SnapshotID             uuid.UUID    `json:"snapshotId"`
	ReleaseID              string       `json:"releaseId"`
	AdapterVersion         string       `json:"adapterVersion"`
	AgentID                string       `json:"agentId"`
	ModelProfileID         string       `json:"modelProfileId"`
	State                  AttemptState `json:"state"`
	Phase                  Phase        `json:"phase"`
	CorrectionCount        int          `json:"correctionCount"`
	MaxCorrections         int          `json:"maxCorrections"`
	LastCheckpointID       *uuid.UUID   `json:"lastCheckpointId" doc:"The checkpoint of the highest sequence, or null."`
	ContextSnapshotRef     *string      `json:"contextSnapshotRef,omitempty"`
	OutcomeHash            *string      `json:"outcomeHash,omitempty"`
	CancellationObservedAt *Time        `json:"cancellationObservedAt,omitempty"`
	StartedAt              Time         `json:"startedAt"`
	EndedAt                *Time        `json:"endedAt,omitempty"`
	// Error is the error the attempt ended with, when one was reported.
	Error *AttemptError `json:"error,omitempty"`
}

// AttemptItem is an attempt in a listing, with its entity tag: a change-feed client passes
// the last item's etag as the next changedSince.
type AttemptItem struct {
	Attempt
	ETag string `json:"etag" doc:"The attempt's strong entity tag (as in its ETag header)."`
}

// DecisionItem is a decision in a listing, with its entity tag, so an inbox answers it
// (If-Match) without reading it first.
type DecisionItem struct {
	Decision
	ETag string `json:"etag" doc:"The decision's strong entity tag (as in its ETag header)."`
}

// ProjectItem is a project in a listing, with its entity tag.
type ProjectItem struct {
	Project
	ETag string `json:"etag" doc:"The project's strong entity tag (as in its ETag header)."`
}

// ReleaseItem is a release adapter in a listing, with its entity tag.
type ReleaseItem struct {
	Release
	ETag string `json:"etag" doc:"The release adapter's strong entity tag (as in its ETag header)."`
}

// FencedRequest is the body of a holder write that carries nothing but its fencing token
// (POST /v1/attempts/{attemptId}/cancellation).
type FencedRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
}

// HeartbeatRequest is the body of POST /v1/attempts/{attemptId}/heartbeat.
type HeartbeatRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
	LeaseSeconds *int  `json:"leaseSeconds,omitempty" validate:"omitempty,min=1,max=3600" doc:"The renewed lease's length (default: the length stored at claim)."`
}

// Heartbeat is the answer to a heartbeat.
type Heartbeat struct {
	LeasedUntil Time `json:"leasedUntil"`
	// CancelRequested says the run should stop: complete it with state cancelled.
	CancelRequested bool `json:"cancelRequested"`
	// BudgetHeld says the run's project reached its daily cost budget: this attempt goes on,
	// but no new claim of the project's runs is granted until 00:00 UTC or a higher budget.
	BudgetHeld bool `json:"budgetHeld"`
}

// ReleaseAttemptRequest is the body of POST /v1/attempts/{attemptId}/release.
type ReleaseAttemptRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
	// Charge spends an attempt; an uncharged release gives the run back as it was.
	Charge            bool `json:"charge,omitempty" default:"false"`
	RetryAfterSeconds *int `json:"retryAfterSeconds,omitempty" validate:"omitempty,min=0,max=86400" doc:"When the run is due again (0: at once; default: the backoff)."`
	// Error says why the holder gave the run back; the run keeps a copy of its code and message.
	Error *AttemptError `json:"error,omitempty"`
}

// ParkAttemptRequest is the body of POST /v1/attempts/{attemptId}/park: the holder ends its
// attempt parked and its run waits, holding no lease, until every named decision is closed
// and every named child run has ended, or until dueAt when only a time is named.
type ParkAttemptRequest struct {
	FencingToken int64 `json:"fencingToken" validate:"required,min=1"`
	// DecisionIDs are decisions of this run to wait for (closed: answered, expired or cancelled).
	DecisionIDs []uuid.UUID `json:"decisionIds,omitempty" validate:"omitempty,max=100" doc:"Decisions of this run to wait for (at most 100)."`
	// ChildRunIDs are child runs of this run (delegations) to wait for until they end.
	ChildRunIDs []uuid.UUID `json:"childRunIds,omitempty" validate:"omitempty,max=100" doc:"Children of this run to wait for (at most 100)."`
	// DueAt is when the run is due again at the latest (with conditions: a timeout).
	DueAt *Time `json:"dueAt,omitempty" doc:"When the run is due at the latest; with decisions or children, a timeout."`
}

// CompleteAttemptRequest is the body of POST /v1/attempts/{attemptId}/complete.
type CompleteAttemptRequest struct {
	FencingToken int64           `json:"fencingToken" validate:"required,min=1"`
	State        CompletionState `json:"state" validate:"required"`
	OutcomeHash  *string         `json:"outcomeHash,omitempty" validate:"omitempty,ident=128"`
	// Error says why the attempt failed (or was cancelled); the run keeps a copy of its
	// code and message.
	Error *AttemptError `json:"error,omitempty"`
}

// PatchAttemptRequest is the body of PATCH /v1/attempts/{attemptId}.
type PatchAttemptRequest struct {
	FencingToken int64  `json:"fencingToken" validate:"required,min=1"`
	Phase        *Phase `json:"phase,omitempty"`
	// Correction counts one correction (422 correction_limit past maxCorrections).
	Correction         bool    `json:"correction,omitempty" default:"false"`
	ContextSnapshotRef *string `json:"contextSnapshotRef,omitempty" validate:"omitempty,ident=512"`
}

// LockRequest is the body of PUT /v1/locks/agents/{agentId}/tasks/{taskId}.
type LockRequest struct {
	HolderID   string `json:"holderId" validate:"required,ident=128"`
	TTLSeconds int    `json:"ttlSeconds" validate:"required,min=1,max=86400"`
}

// TaskLock is a task run lock.
type TaskLock struct {
	AgentID   string `json:"agentId"`
	TaskID    string `json:"taskId"`
	HolderID  string `json:"holderId"`
	HeldUntil Time   `json:"heldUntil"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
}

// ReleaseLockParams are the query parameters of DELETE /v1/locks/agents/{agentId}/tasks/{taskId}.
type ReleaseLockParams struct {
	HolderID string `query:"holderId" validate:"required,ident=128" doc:"The holder releasing the lock."`
}

// ListRunsParams are the query parameters of GET /v1/runs.
type ListRunsParams struct {
	State      *RunState   `query:"state"`
	Subject    *string     `query:"subject" validate:"omitempty,ident=256"`
	ProjectID  *string     `query:"projectId" validate:"omitempty,segment=64"`
	Kind       *string     `query:"kind" validate:"omitempty,ident=64"`
	AgentID    *string     `query:"agentId" validate:"omitempty,segment=128"`
	Band       *Band       `query:"band"`
	QueuedFrom *Time       `query:"queuedFrom" doc:"Runs queued at or after this time."`
	QueuedTo   *Time       `query:"queuedTo" doc:"Runs queued before this time."`
	Outcome    *RunOutcome `query:"outcome" doc:"Ended runs with this outcome."`
	ErrorCode  *string     `query:"errorCode" validate:"omitempty,errcode" doc:"Runs whose last error has this code."`
	// HasError names the runs without an error (false), which no errorCode can name: the
	// errorCode insight's "(none)" group.
	HasError  *bool   `query:"hasError" doc:"true: runs whose last error has a code; false: runs without an error (the errorCode insight's \"(none)\" group); not false with errorCode."`
	ReleaseID *string `query:"releaseId" validate:"omitempty,segment=256" doc:"Runs whose latest attempt ran this release (as insights group runs by release)."`
	// HasRelease names the runs without a release (false: never claimed), which no releaseId
	// can name: the release insight's "(none)" group.
	HasRelease *bool   `query:"hasRelease" doc:"true: runs with an attempt (so a release); false: runs never claimed, without a release (the release insight's \"(none)\" group); not false with releaseId."`
	EndedFrom  *Time   `query:"endedFrom" doc:"Runs ended at or after this time."`
	EndedTo    *Time   `query:"endedTo" doc:"Runs ended before this time."`
	Tag        *string `query:"tag" validate:"omitempty,ident=64" doc:"Runs enqueued with this tag."`
	// AttemptsMin and AttemptsMax narrow by the run's attempts as the attempts-per-run
	// insight counts them (every claim's attempt, parked ones included).
	AttemptsMin *int `query:"attemptsMin" validate:"omitempty,min=0,max=1000000" doc:"Runs with at least this many attempts (1: claimed at least once, as claim latency counts)."`
	AttemptsMax *int `query:"attemptsMax" validate:"omitempty,min=0,max=1000000" doc:"Runs with at most this many attempts."`
	// FirstReleaseID narrows to runs first claimed under a release, as claim latency groups
	// runs by release.
	FirstReleaseID *string `query:"firstReleaseId" validate:"omitempty,segment=256" doc:"Runs whose first attempt ran this release (as claim latency groups runs by release)."`
	// The not* lists leave out the runs of the groups an insight names, so that its "other"
	// group (every group past the largest InsightMaxGroups) links to exactly its runs. A run
	// without the value (no error, never claimed) is kept: the insight counts it as "(none)",
	// named or in "other"; hasError and hasRelease leave it out.
	NotProjectID      []string `query:"notProjectId" validate:"omitempty,max=64,dive,segment=64" doc:"Runs of none of these projects (repeat the parameter, at most 64)."`
	NotAgentID        []string `query:"notAgentId" validate:"omitempty,max=64,dive,segment=128" doc:"Runs of none of these agents (repeat the parameter, at most 64)."`
	NotKind           []string `query:"notKind" validate:"omitempty,max=64,dive,ident=64" doc:"Runs of none of these kinds (repeat the parameter, at most 64)."`
	NotReleaseID      []string `query:"notReleaseId" validate:"omitempty,max=64,dive,segment=256" doc:"Runs whose latest attempt ran none of these releases; runs never claimed are kept (repeat the parameter, at most 64)."`
	NotErrorCode      []string `query:"notErrorCode" validate:"omitempty,max=64,dive,errcode" doc:"Runs whose last error has none of these codes; runs without an error are kept (repeat the parameter, at most 64)."`
	NotFirstReleaseID []string `query:"notFirstReleaseId" validate:"omitempty,max=64,dive,segment=256" doc:"Runs whose first attempt ran none of these releases; runs never claimed are kept (repeat the parameter, at most 64)."`
	PageParams
}

// Defaults of absent enqueue members (the `default` tags say the same; a test keeps them in
// step).
const (
	DefaultBand           = BandBatch
	DefaultMaxAttempts    = 3
	DefaultMaxCorrections = 3
)
