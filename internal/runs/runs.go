// Package runs is the run-lease core (DESIGN.md section 4): enqueue, claim, the fence every
// holder write passes and the one exact-repeat rule of those writes (WriteFenced),
// heartbeat, release, complete, cancel, continueAfter and the leaderless reaper (task run
// locks are internal/locks'). It is the only writer of the Runs table, and keeps what depends on it in the same
// transactions: each subject's head marker (queue.go) and the leased counts.
//
// Files: service.go (the service, enqueue, cancel, continue, reads), chain.go (the run that
// continues a run), claim.go, notify.go (waking this replica's idle claimers), fence.go
// (the fence and WriteFenced, heartbeat, attempt patches), finish.go (complete, release,
// leaving a lease), queue.go (subject locks, head markers, counters, request hashes),
// reaper.go, locks.go (task run locks), hooks.go (what the ledger packages keep in step),
// observer.go (what the metrics count), wire.go and http.go (the API's forms and routes),
// and the query sets of each dialect.
package runs

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
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

// Arg is the document as a statement argument for an nvarchar(max) column: NULL when empty,
// else sent as nvarchar(max) where the dialect needs that (one cached plan for every length).
func (j JSONText) Arg(d sqldb.Dialect) any {
	if len(j) == 0 {
		return nil
	}
	return d.JSON(string(j))
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

// Run is one run: the lease of one piece of agent work on one subject.
type Run struct {
	RunID              uuid.UUID        `db:"RunId"`
	TenantID           string           `db:"TenantId"`
	ProjectID          string           `db:"ProjectId"`
	EnvironmentID      *string          `db:"EnvironmentId"`
	Subject            string           `db:"Subject"`
	Kind               string           `db:"Kind"`
	AgentID            string           `db:"AgentId"`
	StepID             uuid.UUID        `db:"StepId"`
	SnapshotID         uuid.UUID        `db:"SnapshotId"`
	Input              JSONText         `db:"Input"`
	Band               api.Band         `db:"Band"`
	State              api.RunState     `db:"State"`
	Epoch              int64            `db:"Epoch"`
	HolderID           *string          `db:"HolderId"`
	LeaseSeconds       *int             `db:"LeaseSeconds"`
	LeasedUntil        *time.Time       `db:"LeasedUntil"`
	Attempt            int              `db:"Attempt"`
	MaxAttempts        int              `db:"MaxAttempts"`
	MaxCorrections     int              `db:"MaxCorrections"`
	QueuedAt           time.Time        `db:"QueuedAt"`
	DueAt              time.Time        `db:"DueAt"`
	DeadlineAt         *time.Time       `db:"DeadlineAt"`
	EndedAt            *time.Time       `db:"EndedAt"`
	Outcome            *api.RunOutcome  `db:"Outcome"`
	ErrorCode          *string          `db:"ErrorCode"`
	ErrorMessage       *string          `db:"ErrorMessage"`
	CancelRequestedAt  *time.Time       `db:"CancelRequestedAt"`
	IdempotencyKey     *string          `db:"IdempotencyKey"`
	ParentRunID        uuid.NullUUID    `db:"ParentRunId"`
	Depth              int              `db:"Depth"`
	ContinuedFromRunID uuid.NullUUID    `db:"ContinuedFromRunId"`
	CreatedBy          string           `db:"CreatedBy"`
	Version            sqldb.RowVersion `db:"Version"`
	// Tags is the JSON array of the run's tags (empty: none); Metadata its enqueuer's JSON.
	Tags     JSONText `db:"Tags"`
	Metadata JSONText `db:"Metadata"`
	// ForkedFromCheckpointID is the checkpoint of another run this run was forked from: its
	// resume point until it writes a checkpoint of its own.
	ForkedFromCheckpointID uuid.NullUUID `db:"ForkedFromCheckpointId"`
	// RunExtras are what the enqueue gave that the run keeps as given (continuations keep them).
	api.RunExtras
	// RequestHash is the hash of the enqueue request's defining fields (read only where an
	// idempotency key is compared; see Spec.requestHash), nil for a continuation and for a
	// run enqueued without a key (EnqueueTx computes none).
	RequestHash *string `db:"RequestHash"`
	// SubjectHead is the head marker (read only by the insert: see queries.insert).
	SubjectHead bool `db:"SubjectHead"`
	// Purged marks the stand-in for a run that retention deleted: an enqueue repeating its
	// idempotency key gets this, never a second run.
	Purged bool `db:"-"`
}

// NoAttemptLeft reports whether the run has spent all its attempts: a continuation, which
// starts one attempt past it, would be past MaxAttempts (attempts_exhausted).
func (r Run) NoAttemptLeft() bool { return r.Attempt >= r.MaxAttempts }

// Lease is what a claim hands the holder: every write it makes presents FencingToken.
type Lease struct {
	LeaseID      uuid.UUID
	FencingToken int64
	LeasedUntil  time.Time
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
