// Package runs is the run-lease core (DESIGN.md section 4): enqueue, claim, the fence every
// holder write passes, heartbeat, release, complete, cancel, continueAfter, the leaderless
// reaper, and task run locks. It is the only writer of the Runs table.
package runs

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/enum"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// State is a run's state (stored as its position).
type State int

// Run states.
const (
	Queued State = iota
	Leased
	Ended
)

// StateNames are the wire names of State.
var StateNames = enum.Names{"queued", "leased", "ended"}

func (s State) String() string               { return StateNames.Name(int(s)) }
func (s State) MarshalJSON() ([]byte, error) { return StateNames.Marshal(int(s)) }

// Band is a run's priority band.
type Band int

// Bands, most urgent first.
const (
	Interactive Band = iota
	Batch
	Background
)

// BandNames are the wire names of Band.
var BandNames = enum.Names{"interactive", "batch", "background"}

func (b Band) String() string               { return BandNames.Name(int(b)) }
func (b Band) MarshalJSON() ([]byte, error) { return BandNames.Marshal(int(b)) }

// Outcomes of an ended run (stored as the wire string).
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeExhausted = "exhausted"
	OutcomeDeadline  = "deadline"
)

// JSONText is a JSON document stored as text and sent as itself.
type JSONText []byte

// Scan reads the stored text.
func (j *JSONText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = JSONText(v)
	case []byte:
		*j = append(JSONText(nil), v...)
	default:
		return fmt.Errorf("cannot scan %T into JSONText", src)
	}
	return nil
}

// Value stores the document as text (NULL when empty).
func (j JSONText) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

// MarshalJSON sends the document as is (null when empty).
func (j JSONText) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps the document's bytes.
func (j *JSONText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*j = nil
		return nil
	}
	*j = append((*j)[:0], b...)
	return nil
}

var _ json.Marshaler = JSONText(nil)

// AnyJSON marks JSONText as any JSON document in the OpenAPI schema.
func (JSONText) AnyJSON() {}

// Run is one run: the lease of one piece of agent work on one subject.
type Run struct {
	RunID              uuid.UUID        `db:"RunId" json:"runId"`
	TenantID           string           `db:"TenantId" json:"-"`
	ProjectID          string           `db:"ProjectId" json:"projectId"`
	EnvironmentID      *string          `db:"EnvironmentId" json:"environmentId,omitempty"`
	Subject            string           `db:"Subject" json:"subject"`
	Kind               string           `db:"Kind" json:"kind"`
	AgentID            string           `db:"AgentId" json:"agentId"`
	StepID             uuid.UUID        `db:"StepId" json:"stepId"`
	SnapshotID         uuid.UUID        `db:"SnapshotId" json:"snapshotId"`
	Input              JSONText         `db:"Input" json:"input"`
	Band               Band             `db:"Band" json:"band"`
	State              State            `db:"State" json:"state"`
	Epoch              int64            `db:"Epoch" json:"epoch"`
	HolderID           *string          `db:"HolderId" json:"holderId,omitempty"`
	LeaseSeconds       *int             `db:"LeaseSeconds" json:"leaseSeconds,omitempty"`
	LeasedUntil        *time.Time       `db:"LeasedUntil" json:"leasedUntil,omitempty"`
	Attempt            int              `db:"Attempt" json:"attempt"`
	MaxAttempts        int              `db:"MaxAttempts" json:"maxAttempts"`
	MaxCorrections     int              `db:"MaxCorrections" json:"maxCorrections"`
	QueuedAt           time.Time        `db:"QueuedAt" json:"queuedAt"`
	DueAt              time.Time        `db:"DueAt" json:"dueAt"`
	DeadlineAt         *time.Time       `db:"DeadlineAt" json:"deadlineAt,omitempty"`
	EndedAt            *time.Time       `db:"EndedAt" json:"endedAt,omitempty"`
	Outcome            *string          `db:"Outcome" json:"outcome,omitempty"`
	ErrorCode          *string          `db:"ErrorCode" json:"errorCode,omitempty"`
	ErrorMessage       *string          `db:"ErrorMessage" json:"errorMessage,omitempty"`
	CancelRequestedAt  *time.Time       `db:"CancelRequestedAt" json:"cancelRequestedAt,omitempty"`
	IdempotencyKey     *string          `db:"IdempotencyKey" json:"idempotencyKey,omitempty"`
	ParentRunID        uuid.NullUUID    `db:"ParentRunId" json:"parentRunId"`
	Depth              int              `db:"Depth" json:"depth"`
	ContinuedFromRunID uuid.NullUUID    `db:"ContinuedFromRunId" json:"continuedFromRunId"`
	CreatedBy          string           `db:"CreatedBy" json:"createdBy"`
	Version            sqldb.RowVersion `db:"Version" json:"-"`
	// RequestHash is the hash of the enqueue request's defining fields (read only where an
	// idempotency key is compared; see Spec.requestHash).
	RequestHash *string `db:"RequestHash" json:"-"`
	// Purged marks the stand-in for a run that retention deleted: an enqueue repeating its
	// idempotency key gets this, never a second run.
	Purged bool `db:"-" json:"purged,omitempty"`
}

// Lease is what a claim hands the holder: every write it makes presents FencingToken.
type Lease struct {
	LeaseID      uuid.UUID `json:"leaseId"`
	FencingToken int64     `json:"fencingToken"`
	LeasedUntil  time.Time `json:"leasedUntil"`
}

// Config holds the lease core's tunables (DESIGN.md section 8).
type Config struct {
	// LeaseTTL is the lease length when a claim names none.
	LeaseTTL time.Duration
	// BandAging is how long a BACKGROUND run waits past due before it competes with BATCH.
	BandAging time.Duration
	// MaxDepth is the deepest parent chain an enqueue may make.
	MaxDepth int
	// FairnessWindow is how many of a band's oldest due runs a claim weighs by project.
	FairnessWindow int
	// ReaperInterval is how often the reaper runs on this replica.
	ReaperInterval time.Duration
	// PollInterval is how often a long-polling claim looks again for work that another
	// replica enqueued (enqueues on this replica wake it at once).
	PollInterval time.Duration
	// ReaperBatch bounds the leases one reaper tick takes back.
	ReaperBatch int
}

// DefaultConfig returns DESIGN.md's defaults.
func DefaultConfig() Config {
	return Config{
		LeaseTTL:       30 * time.Second,
		BandAging:      10 * time.Minute,
		MaxDepth:       8,
		FairnessWindow: 64,
		ReaperInterval: 5 * time.Second,
		PollInterval:   time.Second,
		ReaperBatch:    256,
	}
}

// Backoff is the delay before a requeued run is due again after n charged attempts:
// exponential from 1 s, factor 2, capped at 10 minutes, with up to 20% jitter subtracted
// so that runs that failed together do not return together.
func Backoff(n int, jitter float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := time.Second
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d - time.Duration(float64(d)*0.2*jitter)
}

const maxBackoff = 10 * time.Minute
