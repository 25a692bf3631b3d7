// Package attempts keeps ExecutionAttempts: one row per claim of a run, with its lease
// (LeaseId, FencingToken), phase, corrections and end. The run-lease core creates and ends
// attempts inside its own transactions through the Tx-level functions here.
package attempts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Attempt is one execution attempt of a run.
type Attempt struct {
	AttemptID              uuid.UUID        `db:"AttemptId"`
	RunID                  uuid.UUID        `db:"RunId"`
	StepID                 uuid.UUID        `db:"StepId"`
	TenantID               string           `db:"TenantId"`
	ProjectID              string           `db:"ProjectId"`
	EnvironmentID          *string          `db:"EnvironmentId"`
	LeaseID                uuid.UUID        `db:"LeaseId"`
	FencingToken           int64            `db:"FencingToken"`
	SnapshotID             uuid.UUID        `db:"SnapshotId"`
	ReleaseID              string           `db:"ReleaseId"`
	AdapterVersion         string           `db:"AdapterVersion"`
	AgentID                string           `db:"AgentId"`
	ModelProfileID         string           `db:"ModelProfileId"`
	State                  api.AttemptState `db:"State"`
	Phase                  api.Phase        `db:"Phase"`
	CorrectionCount        int              `db:"CorrectionCount"`
	MaxCorrections         int              `db:"MaxCorrections"`
	LastCheckpointID       uuid.NullUUID    `db:"LastCheckpointId"`
	ContextSnapshotRef     *string          `db:"ContextSnapshotRef"`
	OutcomeHash            *string          `db:"OutcomeHash"`
	CancellationObservedAt *time.Time       `db:"CancellationObservedAt"`
	StartedAt              time.Time        `db:"StartedAt"`
	EndedAt                *time.Time       `db:"EndedAt"`
	Version                sqldb.RowVersion `db:"Version"`
	// ErrorCode, ErrorMessage and ErrorDetails are the error the attempt ended with (all
	// NULL when none was reported).
	ErrorCode    *string `db:"ErrorCode"`
	ErrorMessage *string `db:"ErrorMessage"`
	ErrorDetails *string `db:"ErrorDetails"`
}

// Failure is the error an attempt ends with: a complete's or a release's, or the reaper's.
type Failure struct {
	Code    string
	Message string
	// Details is compact JSON, or empty.
	Details string
}

// Failure returns the error the attempt ended with, or nil.
func (a Attempt) Failure() *Failure {
	if a.ErrorCode == nil {
		return nil
	}
	f := &Failure{Code: *a.ErrorCode}
	if a.ErrorMessage != nil {
		f.Message = *a.ErrorMessage
	}
	if a.ErrorDetails != nil {
		f.Details = *a.ErrorDetails
	}
	return f
}

// Equal reports whether two failures (either nil) are the same error.
func (f *Failure) Equal(g *Failure) bool {
	if f == nil || g == nil {
		return f == g
	}
	return *f == *g
}

// Wire returns the failure as the API sends it.
func (f *Failure) Wire() *api.AttemptError {
	if f == nil {
		return nil
	}
	e := &api.AttemptError{Code: f.Code, Message: f.Message}
	if f.Details != "" {
		e.Details = json.RawMessage(f.Details)
	}
	return e
}

// Wire returns the attempt as the API sends it.
func (a Attempt) Wire() api.Attempt {
	return api.Attempt{
		AttemptID: a.AttemptID, RunID: a.RunID, StepID: a.StepID, ProjectID: a.ProjectID, EnvironmentID: a.EnvironmentID,
		LeaseID: a.LeaseID, FencingToken: a.FencingToken, SnapshotID: a.SnapshotID, ReleaseID: a.ReleaseID,
		AdapterVersion: a.AdapterVersion, AgentID: a.AgentID, ModelProfileID: a.ModelProfileID, State: a.State,
		Phase: a.Phase, CorrectionCount: a.CorrectionCount, MaxCorrections: a.MaxCorrections,
		ContextSnapshotRef: a.ContextSnapshotRef, OutcomeHash: a.OutcomeHash,
		CancellationObservedAt: api.TimeOf(a.CancellationObservedAt), StartedAt: api.NewTime(a.StartedAt),
		EndedAt: api.TimeOf(a.EndedAt), LastCheckpointID: ids.Ptr(a.LastCheckpointID), Error: a.Failure().Wire(),
	}
}

// Ended reports whether the attempt is over.
func (a *Attempt) Ended() bool { return a.State != api.AttemptRunning }

// Insert writes a new attempt (the claim's) and returns it as stored. The statement answers
// only the Version: the rest of the row is a as insertArgs (columns.go) sends it (the start truncated as
// Dialect.Time stores it, no correction yet, the columns it does not set NULL): reading the
// whole row back cost a claim about 80 thousand instructions (docs/perf/issue-22.md).
func Insert(ctx context.Context, tx *sqldb.Tx, a Attempt) (Attempt, error) {
	return InsertStamped(ctx, tx, a, 0)
}

// InsertStamped is Insert for the caller that knows the stamp (nonzero) the insert takes,
// where the dialect has insertUnanswered (SQLite): the claim, whose lease wrote the stamp its
// pick read, and nothing since. The statement then answers nothing (RETURNING fills an
// ephemeral table per statement), the attempt's Version is stamp, and the statement refuses
// (sqldb.ErrRefused) rather than write another. Elsewhere, or with no stamp, it is Insert.
func InsertStamped(ctx context.Context, tx *sqldb.Tx, a Attempt, stamp sqldb.RowVersion) (Attempt, error) {
	q := queriesFor(tx.Dialect)
	out := Attempt{
		AttemptID: a.AttemptID, RunID: a.RunID, StepID: a.StepID, TenantID: a.TenantID, ProjectID: a.ProjectID,
		EnvironmentID: a.EnvironmentID, LeaseID: a.LeaseID, FencingToken: a.FencingToken, SnapshotID: a.SnapshotID,
		ReleaseID: a.ReleaseID, AdapterVersion: a.AdapterVersion, AgentID: a.AgentID, ModelProfileID: a.ModelProfileID,
		State: a.State, Phase: a.Phase, MaxCorrections: a.MaxCorrections, StartedAt: sqldb.Truncate(a.StartedAt),
	}
	args := insertArgs(tx.Dialect, a)
	if q.insertUnanswered != "" && stamp != 0 {
		out.Version = stamp
		if _, err := tx.ExecContext(ctx, q.insertUnanswered, append(args, stamp)...); err != nil {
			return Attempt{}, fmt.Errorf("insert attempt: %w", err)
		}
		return out, nil
	}
	if err := tx.GetContext(ctx, &out.Version, q.insert, args...); err != nil {
		return Attempt{}, fmt.Errorf("insert attempt: %w", err)
	}
	return out, nil
}

// Lock reads an attempt of the tenant and locks its row until the transaction ends (the
// first lock of every fenced write: attempt, then run). api.CodeNotFound when missing.
func Lock(ctx context.Context, tx *sqldb.Tx, tenantID string, id uuid.UUID) (Attempt, error) {
	return get(ctx, tx, queriesFor(tx.Dialect).lock, tenantID, id)
}

// Get reads an attempt of the tenant without locking it.
func Get(ctx context.Context, tx *sqldb.Tx, tenantID string, id uuid.UUID) (Attempt, error) {
	return get(ctx, tx, queriesFor(tx.Dialect).get, tenantID, id)
}

// ListOf reads rows that belong to an attempt in one read transaction: api.CodeNotFound when
// the attempt is missing or another tenant's, else what list reads. Errors are wrapped with
// what ("list calls: ...").
func ListOf[T any](ctx context.Context, db *sqldb.DB, tenantID string, attemptID uuid.UUID, what string, list func(tx *sqldb.Tx) ([]T, error)) ([]T, error) {
	var out []T
	err := db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		if _, err := Get(ctx, tx, tenantID, attemptID); err != nil {
			return err
		}
		var err error
		out, err = list(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func get(ctx context.Context, tx *sqldb.Tx, query, tenantID string, id uuid.UUID) (Attempt, error) {
	var a Attempt
	err := tx.GetContext(ctx, &a, query, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Attempt{}, apperr.New(api.CodeNotFound, "no attempt %s", id)
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("read attempt: %w", err)
	}
	return a, nil
}

// EndFenced ends a running attempt in state at now, with an optional outcome hash and the
// error it ended with (nil: none), for the caller that read the attempt under a holder's
// fence in this transaction (fenced holds FenceColumns' fields as read; its other fields are not
// read): the statement answers only the columns the fence did not read, and the attempt
// is fenced's columns with what the end wrote. Nothing else writes the attempt between
// the fence and its end: the fence holds the attempt's lock (SQL Server's U lock, SQLite's
// one writer) until commit.
func EndFenced(ctx context.Context, tx *sqldb.Tx, fenced Attempt, state api.AttemptState, now time.Time, outcomeHash *string, f *Failure) (Attempt, error) {
	a, args := endedAs(tx, fenced, state, now, outcomeHash, f)
	err := tx.GetContext(ctx, &a, queriesFor(tx.Dialect).endFenced, args...)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Attempt{}, apperr.New(api.CodeAttemptEnded, "attempt %s has ended", fenced.AttemptID)
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("end attempt: %w", err)
	}
	return a, nil
}

// EndWhole is EndFenced for the caller whose fence read every column of the attempt and,
// where the dialect has endUnanswered (SQLite), the stamp (nonzero) the transaction's first
// write takes: this end must be that write. The statement then answers nothing (RETURNING
// fills an ephemeral table per statement), and the attempt is whole's with what the end
// wrote and that stamp; the statement refuses (sqldb.ErrRefused) rather than write
// another. Elsewhere, or with no stamp, it is EndFenced.
func EndWhole(ctx context.Context, tx *sqldb.Tx, whole Attempt, stamp sqldb.RowVersion, state api.AttemptState, now time.Time, outcomeHash *string, f *Failure) (Attempt, error) {
	q := queriesFor(tx.Dialect)
	if q.endUnanswered == "" || stamp == 0 {
		return EndFenced(ctx, tx, whole, state, now, outcomeHash, f)
	}
	a, args := endedAs(tx, whole, state, now, outcomeHash, f)
	a.Version = stamp
	res, err := tx.ExecContext(ctx, q.endUnanswered, append(args, stamp)...)
	if err != nil {
		return Attempt{}, fmt.Errorf("end attempt: %w", err)
	}
	switch n, err := res.RowsAffected(); {
	case err != nil:
		return Attempt{}, fmt.Errorf("end attempt: %w", err)
	case n == 0:
		return Attempt{}, apperr.New(api.CodeAttemptEnded, "attempt %s has ended", whole.AttemptID)
	case n != 1:
		return Attempt{}, fmt.Errorf("end attempt %s: changed %d rows, want 1", whole.AttemptID, n)
	}
	return a, nil
}

// endedAs is the attempt known as it was, with what an end writes, and the end's arguments.
func endedAs(tx *sqldb.Tx, known Attempt, state api.AttemptState, now time.Time, outcomeHash *string, f *Failure) (Attempt, []any) {
	a, endedAt := known, sqldb.Truncate(now)
	a.State, a.EndedAt = state, &endedAt
	if outcomeHash != nil {
		hash := *outcomeHash
		a.OutcomeHash = &hash
	}
	a.ErrorCode, a.ErrorMessage, a.ErrorDetails = nil, nil, nil
	var code, message, details any
	if f != nil {
		e := *f
		code, message = tx.Dialect.Text(e.Code), tx.Dialect.Text(e.Message)
		a.ErrorCode, a.ErrorMessage = &e.Code, &e.Message
		if e.Details != "" {
			details = tx.Dialect.JSON(e.Details)
			a.ErrorDetails = &e.Details
		}
	}
	// Room for endUnanswered's stamp.
	args := make([]any, 0, 8)
	return a, append(args, known.AttemptID, int(state), tx.Dialect.Time(now), outcomeHash, code, message, details)
}

// ObserveCancellation records that the holder saw the cancel request and returns the
// attempt as stored. The caller checks first that it is not recorded yet (the fence read
// the attempt under its lock); sqldb.ErrNotFound when it was.
func ObserveCancellation(ctx context.Context, tx *sqldb.Tx, id uuid.UUID, now time.Time) (Attempt, error) {
	var a Attempt
	if err := tx.GetContext(ctx, &a, queriesFor(tx.Dialect).observeCancel, id, tx.Dialect.Time(now)); err != nil {
		return Attempt{}, fmt.Errorf("observe cancellation: %w", err)
	}
	return a, nil
}

// Patch changes a running attempt's phase, adds a correction, or records its context
// snapshot, under the caller's fence, and returns the attempt as stored. Nil phase and ref
// keep their values. api.CodeAttemptEnded when the attempt is no longer running.
func Patch(ctx context.Context, tx *sqldb.Tx, id uuid.UUID, phase *api.Phase, correction bool, contextSnapshotRef *string) (Attempt, error) {
	var p any
	if phase != nil {
		p = int(*phase)
	}
	add := 0
	if correction {
		add = 1
	}
	var a Attempt
	err := tx.GetContext(ctx, &a, queriesFor(tx.Dialect).patch, id, p, add, contextSnapshotRef)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Attempt{}, apperr.New(api.CodeAttemptEnded, "attempt %s has ended", id)
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("patch attempt: %w", err)
	}
	return a, nil
}

// SetPhase moves a running attempt to phase (a decision request moves it to
// AwaitingDecision).
func SetPhase(ctx context.Context, tx *sqldb.Tx, id uuid.UUID, phase api.Phase) error {
	_, err := Patch(ctx, tx, id, &phase, false, nil)
	return err
}

// Checkpointed records an appended checkpoint on its running attempt in one statement:
// when seq is the attempt's highest checkpoint sequence, the checkpoint becomes its
// LastCheckpointId and its phase the attempt's phase; a late append of a lower sequence
// changes neither (the highest sequence is the holder's latest progress, so the resume
// point and the phase never move backwards). The caller holds the fence and has just
// inserted the checkpoint.
func Checkpointed(ctx context.Context, tx *sqldb.Tx, id, checkpointID uuid.UUID, seq int, phase api.Phase) error {
	res, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).checkpointed, id, checkpointID, int32(seq), int(phase))
	if err != nil {
		return fmt.Errorf("record checkpoint on attempt: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 1 {
		return fmt.Errorf("record checkpoint on attempt %s: changed %d rows (%v)", id, n, err)
	}
	return nil
}
