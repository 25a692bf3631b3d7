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
	// ChangedSince is an attempt's ETag, quoted or not: the change feed after it.
	ChangedSince *string `query:"changedSince" validate:"omitempty,max=64" doc:"An attempt's ETag (quoted or not): the attempts changed after it, oldest change first; combines with limit and cursor only."`
	PageParams
}

// TimelineEntry is one line of an attempt's timeline: a checkpoint, call, decision or
// delegation, which Item holds as its own JSON.
type TimelineEntry struct {
	Kind TimelineKind `json:"kind"`
	At   Time         `json:"at"`
	// Sequence is the checkpoint's or call's sequence; absent for the other kinds.
	Sequence *int32    `json:"sequence,omitempty"`
	ID       uuid.UUID `json:"id"`
	// Item is the entry's row: a Checkpoint, Call, Decision or Delegation by Kind (Decode
	// reads it).
	Item json.RawMessage `json:"item"`
}

// OneOf says which types a member holding raw JSON is one of (the OpenAPI document reads it).
func (TimelineEntry) OneOf() map[string][]any {
	return map[string][]any{"item": {Checkpoint{}, Call{}, Decision{}, Delegation{}}}
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
	default:
		return nil, fmt.Errorf("timeline entry of unknown kind %d", e.Kind)
	}
	if err := json.Unmarshal(e.Item, v); err != nil {
		return nil, fmt.Errorf("decode %s timeline entry: %w", e.Kind, err)
	}
	return v, nil
}
