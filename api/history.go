package api

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// ListAttemptsParams are the query parameters of GET /v1/attempts: either the filters of a
// newest-first listing, or changedSince (with limit and cursor only) for the change feed.
type ListAttemptsParams struct {
	RunID       *uuid.UUID    `query:"runId" doc:"Attempts of this run."`
	AgentID     *string       `query:"agentId" validate:"omitempty,segment=128"`
	ProjectID   *string       `query:"projectId" validate:"omitempty,segment=64"`
	State       *AttemptState `query:"state"`
	StartedFrom *Time         `query:"startedFrom" doc:"Attempts started at or after this time."`
	StartedTo   *Time         `query:"startedTo" doc:"Attempts started before this time."`
	// EndedFrom and EndedTo list the attempts that ended in a window, newest end first (as
	// the attempt insights count them).
	EndedFrom *Time   `query:"endedFrom" doc:"Attempts ended at or after this time, newest end first (with endedTo: as the attempts-ended insight counts them; without state, the succeeded, failed, cancelled, lost and released ones)."`
	EndedTo   *Time   `query:"endedTo" doc:"Attempts ended before this time, newest end first."`
	ReleaseID *string `query:"releaseId" validate:"omitempty,segment=256" doc:"Attempts that ran this release."`
	Kind      *string `query:"kind" validate:"omitempty,ident=64" doc:"Attempts of runs of this kind."`
	ErrorCode *string `query:"errorCode" validate:"omitempty,errcode" doc:"Attempts that ended with an error of this code."`
	// HasError names the attempts without an error (false), which no errorCode can name.
	HasError *bool `query:"hasError" doc:"true: attempts that ended with an error; false: attempts without one (the errorCode insight's \"(none)\" group); not false with errorCode."`
	// The not* lists leave out the attempts of the groups an insight names, so that its
	// "other" group links to exactly its attempts; an attempt without an error is kept.
	NotProjectID []string `query:"notProjectId" validate:"omitempty,max=64,dive,segment=64" doc:"Attempts of none of these projects (repeat the parameter, at most 64)."`
	NotAgentID   []string `query:"notAgentId" validate:"omitempty,max=64,dive,segment=128" doc:"Attempts of none of these agents (repeat the parameter, at most 64)."`
	NotKind      []string `query:"notKind" validate:"omitempty,max=64,dive,ident=64" doc:"Attempts of runs of none of these kinds (repeat the parameter, at most 64)."`
	NotReleaseID []string `query:"notReleaseId" validate:"omitempty,max=64,dive,segment=256" doc:"Attempts that ran none of these releases (repeat the parameter, at most 64)."`
	NotErrorCode []string `query:"notErrorCode" validate:"omitempty,max=64,dive,errcode" doc:"Attempts that ended with an error of none of these codes; attempts without an error are kept (repeat the parameter, at most 64)."`
	// ChangedSince is an attempt's ETag, quoted or not: the change feed after it.
	ChangedSince *string `query:"changedSince" validate:"omitempty,max=64" doc:"An attempt's ETag (quoted or not): the attempts changed after it, oldest change first; combines with limit and cursor only."`
	PageParams
}

// TimelineEntry is one line of an attempt's timeline: a checkpoint, call, decision or
// delegation, which Item holds as its own JSON; an ended attempt's timeline ends with an
// `end` entry (an AttemptEnd) saying how it ended.
type TimelineEntry struct {
	Kind TimelineKind `json:"kind"`
	At   Time         `json:"at"`
	// Sequence is the checkpoint's or call's sequence; absent for the other kinds.
	Sequence *int32    `json:"sequence,omitempty"`
	ID       uuid.UUID `json:"id"`
	// Item is the entry's row: a Checkpoint, Call, Decision, Delegation or AttemptEnd by
	// Kind (Decode reads it).
	Item json.RawMessage `json:"item"`
}

// OneOf says which types a member holding raw JSON is one of (the OpenAPI document reads it).
func (TimelineEntry) OneOf() map[string][]any {
	return map[string][]any{"item": {Checkpoint{}, Call{}, Decision{}, Delegation{}, AttemptEnd{}}}
}

// AttemptEnd is the last entry of an ended attempt's timeline: how it ended (completed
// with its state and error, released, lost with its lease and epoch, cancelled), as the
// console's run page shows it.
type AttemptEnd struct {
	State   AttemptState `json:"state"`
	EndedAt Time         `json:"endedAt"`
	// LeaseID and FencingToken name the lease the attempt held (the epoch a lost lease had).
	LeaseID                uuid.UUID     `json:"leaseId"`
	FencingToken           int64         `json:"fencingToken"`
	OutcomeHash            *string       `json:"outcomeHash,omitempty"`
	Error                  *AttemptError `json:"error,omitempty"`
	CancellationObservedAt *Time         `json:"cancellationObservedAt,omitempty"`
}

// Decode returns the entry's item as a *Checkpoint, *Call, *Decision or *Delegation.
func (e TimelineEntry) Decode() (any, error) {
	var v any
	switch e.Kind {
	case TimelineCheckpoint:
		v = new(Checkpoint)
	case TimelineCall:
		v = new(Call)
	case TimelineDecision:
		v = new(Decision)
	case TimelineDelegation:
		v = new(Delegation)
	case TimelineEnd:
		v = new(AttemptEnd)
	default:
		return nil, fmt.Errorf("timeline entry of unknown kind %d", e.Kind)
	}
	if err := json.Unmarshal(e.Item, v); err != nil {
		return nil, fmt.Errorf("decode %s timeline entry: %w", e.Kind, err)
	}
	return v, nil
}
