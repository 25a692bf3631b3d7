package runs

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/strictjson"
)

// Wire returns the run as the API sends it.
func (r Run) Wire() api.Run {
	return api.Run{
		RunID: r.RunID, ProjectID: r.ProjectID, EnvironmentID: r.EnvironmentID, Subject: r.Subject, Kind: r.Kind,
		AgentID: r.AgentID, StepID: r.StepID, SnapshotID: r.SnapshotID, Input: strictjson.Stored(r.Input),
		Band: r.Band, State: r.State, Epoch: r.Epoch, HolderID: r.HolderID, LeaseSeconds: r.LeaseSeconds,
		LeasedUntil: api.TimeOf(r.LeasedUntil), AttemptsSpent: r.Attempt, MaxAttempts: r.MaxAttempts,
		MaxCorrections: r.MaxCorrections, QueuedAt: api.NewTime(r.QueuedAt), DueAt: api.NewTime(r.DueAt),
		DeadlineAt: api.TimeOf(r.DeadlineAt), EndedAt: api.TimeOf(r.EndedAt), Outcome: r.Outcome,
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, CancelRequestedAt: api.TimeOf(r.CancelRequestedAt),
		IdempotencyKey: r.IdempotencyKey, ParentRunID: ids.Ptr(r.ParentRunID), Depth: r.Depth,
		ContinuedFromRunID: ids.Ptr(r.ContinuedFromRunID), CreatedBy: r.CreatedBy, Purged: r.Purged,
		Tags: r.tagList(), Metadata: json.RawMessage(r.Metadata), ForkedFromCheckpointID: ids.Ptr(r.ForkedFromCheckpointID),
		RunExtras: r.RunExtras,
	}
}

// tagList is the stored tags as a list (nil: none).
func (r Run) tagList() []string {
	if len(r.Tags) == 0 {
		return nil
	}
	var tags []string
	if json.Unmarshal(r.Tags, &tags) != nil {
		return nil
	}
	return tags
}

// Item returns the run as a listing sends it, with its entity tag.
func (r Run) Item() api.RunItem {
	return api.RunItem{Run: r.Wire(), ETag: r.Version.ETag()}
}

// Wire returns the claim as the API sends it.
func (c Claimed) Wire() api.Claim {
	return api.Claim{Run: c.Run.Wire(), Attempt: c.Attempt.Wire(), Lease: api.Lease{
		LeaseID: c.Lease.LeaseID, FencingToken: c.Lease.FencingToken, LeasedUntil: api.NewTime(c.Lease.LeasedUntil),
	}}
}

// Wire returns the heartbeat's answer as the API sends it.
func (h Heartbeat) Wire() api.Heartbeat {
	return api.Heartbeat{LeasedUntil: api.NewTime(h.LeasedUntil), CancelRequested: h.CancelRequested, BudgetHeld: h.BudgetHeld}
}

// SpecOf converts a validated run spec of the API into the service's (without a parent),
// filling the defaults of absent members.
func SpecOf(r api.RunSpec) Spec {
	spec := Spec{
		ProjectID: r.ProjectID, EnvironmentID: r.EnvironmentID, Subject: r.Subject, Kind: r.Kind, AgentID: r.AgentID,
		StepID: r.StepID, SnapshotID: r.SnapshotID, Band: api.DefaultBand, MaxAttempts: api.DefaultMaxAttempts,
		MaxCorrections: api.DefaultMaxCorrections,
		DueAt:          timeOf(r.DueAt), DeadlineAt: timeOf(r.DeadlineAt), IdempotencyKey: r.IdempotencyKey,
	}
	if r.Band != nil {
		spec.Band = *r.Band
	}
	if len(r.Input) > 0 && string(r.Input) != "null" {
		spec.Input = JSONText(r.Input)
	}
	if r.MaxAttempts != nil {
		spec.MaxAttempts = *r.MaxAttempts
	}
	if r.MaxCorrections != nil {
		spec.MaxCorrections = *r.MaxCorrections
	}
	spec.Tags = r.Tags
	spec.RunExtras = r.RunExtras
	if d := bytes.TrimSpace(r.Metadata); len(d) > 0 && string(d) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, d) == nil {
			spec.Metadata = JSONText(b.Bytes())
		} else {
			spec.Metadata = JSONText(d)
		}
	}
	return spec
}

func timeOf(t *api.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}
