package api

import "github.com/google/uuid"

// BulkAction is what a bulk operation does to each run it matched.
type BulkAction string

// The bulk actions.
const (
	BulkCancel   BulkAction = "cancel"
	BulkContinue BulkAction = "continue"
)

var bulkActionNames = names{string(BulkCancel), string(BulkContinue)}

func (v BulkAction) String() string     { return string(v) }
func (v BulkAction) Valid() bool        { _, ok := bulkActionNames.index(string(v)); return ok }
func (BulkAction) EnumValues() []string { return bulkActionNames.values() }
func (v BulkAction) MarshalText() ([]byte, error) {
	return bulkActionNames.marshalString(string(v), "bulk action")
}
func (v *BulkAction) UnmarshalText(b []byte) error {
	s, err := bulkActionNames.unmarshalString(b)
	*v = BulkAction(s)
	return err
}
func (v *BulkAction) UnmarshalJSON(b []byte) error {
	s, err := bulkActionNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// MaxBulkRunIDs bounds runIds in a bulk request; MaxBulkMatched bounds what one operation
// matches (more is bulk_too_large: narrow the filter).
const (
	MaxBulkRunIDs  = 1000
	MaxBulkMatched = 100_000
)

// BulkFilter is the runs list's filters (GET /v1/runs), as a bulk request's filter.
type BulkFilter struct {
	State      *RunState   `json:"state,omitempty"`
	Subject    *string     `json:"subject,omitempty" validate:"omitempty,ident=256"`
	ProjectID  *string     `json:"projectId,omitempty" validate:"omitempty,segment=64"`
	Kind       *string     `json:"kind,omitempty" validate:"omitempty,ident=64"`
	AgentID    *string     `json:"agentId,omitempty" validate:"omitempty,segment=128"`
	Band       *Band       `json:"band,omitempty"`
	QueuedFrom *Time       `json:"queuedFrom,omitempty" doc:"Runs queued at or after this time."`
	QueuedTo   *Time       `json:"queuedTo,omitempty" doc:"Runs queued before this time."`
	Outcome    *RunOutcome `json:"outcome,omitempty" doc:"Ended runs with this outcome."`
	ErrorCode  *string     `json:"errorCode,omitempty" validate:"omitempty,errcode" doc:"Runs whose last error has this code."`
	HasError   *bool       `json:"hasError,omitempty" doc:"true: runs whose last error has a code; false: runs without an error; not false with errorCode."`
	ReleaseID  *string     `json:"releaseId,omitempty" validate:"omitempty,segment=256" doc:"Runs whose latest attempt ran this release."`
	HasRelease *bool       `json:"hasRelease,omitempty" doc:"true: runs with an attempt (so a release); false: runs never claimed; not false with releaseId."`
	EndedFrom  *Time       `json:"endedFrom,omitempty" doc:"Runs ended at or after this time."`
	EndedTo    *Time       `json:"endedTo,omitempty" doc:"Runs ended before this time."`
	Tag        *string     `json:"tag,omitempty" validate:"omitempty,ident=64" doc:"Runs enqueued with this tag."`
	// The not* lists are the runs list's (an insight's "other" group).
	NotProjectID []string `json:"notProjectId,omitempty" validate:"omitempty,max=64,dive,segment=64" doc:"Runs of none of these projects (at most 64)."`
	NotAgentID   []string `json:"notAgentId,omitempty" validate:"omitempty,max=64,dive,segment=128" doc:"Runs of none of these agents (at most 64)."`
	NotKind      []string `json:"notKind,omitempty" validate:"omitempty,max=64,dive,ident=64" doc:"Runs of none of these kinds (at most 64)."`
	NotReleaseID []string `json:"notReleaseId,omitempty" validate:"omitempty,max=64,dive,segment=256" doc:"Runs whose latest attempt ran none of these releases; runs never claimed are kept (at most 64)."`
	NotErrorCode []string `json:"notErrorCode,omitempty" validate:"omitempty,max=64,dive,errcode" doc:"Runs whose last error has none of these codes; runs without an error are kept (at most 64)."`
}

// BulkRunsRequest is the body of POST /v1/runs/bulk: exactly one of runIds and filter.
type BulkRunsRequest struct {
	Action         BulkAction  `json:"action" validate:"required"`
	RunIDs         []uuid.UUID `json:"runIds,omitempty" validate:"omitempty,min=1,max=1000" doc:"The runs to act on (at most 1000)."`
	Filter         *BulkFilter `json:"filter,omitempty" doc:"The runs to act on: those the runs list shows with these filters when the operation is created (at most 100000)."`
	Reason         *string     `json:"reason,omitempty" validate:"omitempty,max=1000"`
	DryRun         bool        `json:"dryRun,omitempty" doc:"Answer how many runs match (200) without acting."`
	IdempotencyKey *string     `json:"idempotencyKey,omitempty" validate:"omitempty,ident=256" doc:"A repeat with the key and the same body returns the same operation; another body is idempotency_key_reused."`
}

// OperationState is a bulk operation's state.
type OperationState string

// The operation states.
const (
	OperationDryRun    OperationState = "dry_run"
	OperationRunning   OperationState = "running"
	OperationSucceeded OperationState = "succeeded"
)

var operationStateNames = names{string(OperationDryRun), string(OperationRunning), string(OperationSucceeded)}

func (v OperationState) String() string     { return string(v) }
func (v OperationState) Valid() bool        { _, ok := operationStateNames.index(string(v)); return ok }
func (OperationState) EnumValues() []string { return operationStateNames.values() }
func (v OperationState) MarshalText() ([]byte, error) {
	return operationStateNames.marshalString(string(v), "operation state")
}
func (v *OperationState) UnmarshalText(b []byte) error {
	s, err := operationStateNames.unmarshalString(b)
	*v = OperationState(s)
	return err
}
func (v *OperationState) UnmarshalJSON(b []byte) error {
	s, err := operationStateNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// OperationSkips counts the matched runs an operation left as they were, by reason.
type OperationSkips struct {
	Ended             int64 `json:"ended" doc:"cancel: the run had ended."`
	NotEnded          int64 `json:"notEnded" doc:"continue: the run had not ended."`
	AttemptsExhausted int64 `json:"attemptsExhausted" doc:"continue: the run had spent its attempts."`
	NotFound          int64 `json:"notFound" doc:"No run of the tenant has the id (or retention removed it)."`
	ContinuedBefore   int64 `json:"continuedBefore" doc:"continue: the run had been continued already."`
}

// Operation is a bulk operation and its progress.
type Operation struct {
	OperationID     *uuid.UUID     `json:"operationId,omitempty" doc:"Absent on a dry run."`
	Action          BulkAction     `json:"action"`
	State           OperationState `json:"state"`
	Reason          *string        `json:"reason,omitempty"`
	Matched         int64          `json:"matched"`
	Done            int64          `json:"done" doc:"Runs acted on: cancelled, asked to stop (leased) or continued."`
	Cancelled       int64          `json:"cancelled"`
	CancelRequested int64          `json:"cancelRequested" doc:"Leased runs whose holder was asked to stop."`
	Continued       int64          `json:"continued"`
	Skipped         int64          `json:"skipped"`
	Skips           OperationSkips `json:"skips"`
	CreatedAt       *Time          `json:"createdAt,omitempty"`
	FinishedAt      *Time          `json:"finishedAt,omitempty"`
}
