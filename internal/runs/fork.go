package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Fork is what a fork asks for: the checkpoint to start from (one of the run's attempts'),
// and optionally when the new run is due and an idempotency key.
type Fork struct {
	CheckpointID   uuid.UUID
	DueAt          *time.Time
	IdempotencyKey *string
}

// hash is the request hash a fork's idempotency key is compared by: the run forked, the
// checkpoint and the due time as given.
func (f Fork) hash(runID uuid.UUID) string {
	var due *string
	if f.DueAt != nil {
		s := sqldb.Truncate(*f.DueAt).Format(sqldb.TimeLayout)
		due = &s
	}
	b, _ := json.Marshal(struct {
		Fork       uuid.UUID `json:"fork"`
		Checkpoint uuid.UUID `json:"checkpointId"`
		DueAt      *string   `json:"dueAt"`
	}{runID, f.CheckpointID, due})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Fork starts a new run with the spec of a run (ended or not), whose resume point is one of
// that run's checkpoints until it writes its own (checkpoints/last): the run forked and its
// chain are left as they are. The fork is a run of its own: no continuation, a fresh epoch
// and attempt count, the same parent and depth, tags and metadata; the deadline is kept
// only when it is still ahead of the fork's due time. With an idempotency key an exact
// repeat answers the fork made first (created=false); the key naming another request is
// IdempotencyKeyReused. Errors: NotFound (no such run), Invalid naming checkpointId (not a
// checkpoint of the run's attempts).
func (s *Service) Fork(ctx context.Context, c Caller, runID uuid.UUID, f Fork) (Run, bool, error) {
	var (
		out     Run
		created bool
	)
	hash := f.hash(runID)
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		created = false
		src, err := s.getBy(ctx, tx, s.q.get, c.TenantID, runID)
		if err != nil {
			return err
		}
		var point uuid.UUID
		if err := tx.GetContext(ctx, &point, s.q.forkPoint, c.TenantID, runID, f.CheckpointID); errors.Is(err, sqldb.ErrNotFound) {
			return apperr.FieldsInvalid(api.FieldError{Field: "checkpointId", Reason: "names no checkpoint of this run"})
		} else if err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		due := now
		if f.DueAt != nil {
			due = sqldb.Truncate(*f.DueAt)
		}
		deadline := src.DeadlineAt
		if deadline != nil && (!deadline.After(due) || !deadline.After(now)) {
			deadline = nil
		}
		if err := s.lockSubject(ctx, tx, c.TenantID, src.Subject); err != nil {
			return err
		}
		r, err := s.insertRun(ctx, tx, Run{
			RunID: tx.Dialect.NewID(), TenantID: c.TenantID, ProjectID: src.ProjectID, EnvironmentID: src.EnvironmentID,
			Subject: src.Subject, Kind: src.Kind, AgentID: src.AgentID, StepID: src.StepID, SnapshotID: src.SnapshotID,
			Input: src.Input, Band: src.Band, MaxAttempts: src.MaxAttempts, MaxCorrections: src.MaxCorrections,
			QueuedAt: now, DueAt: due, DeadlineAt: deadline, IdempotencyKey: f.IdempotencyKey, ParentRunID: src.ParentRunID,
			Depth: src.Depth, CreatedBy: c.KeyID, Tags: src.Tags, Metadata: src.Metadata,
			ForkedFromCheckpointID: uuid.NullUUID{UUID: point, Valid: true},
		}, &hash)
		switch {
		case f.IdempotencyKey != nil && sqldb.IsConflict(err, s.idempotencyMarkers()...):
			prior, err := s.getBy(ctx, tx, s.q.byIdempotency, c.TenantID, *f.IdempotencyKey)
			if err != nil {
				return err
			}
			if !sameRequest(prior, hash) {
				return apperr.New(api.CodeIdempotencyKeyReused,
					"idempotencyKey %q already names a run made by a different request", *f.IdempotencyKey)
			}
			out = prior
			return nil
		case errors.Is(err, sqldb.ErrNotFound) && f.IdempotencyKey != nil:
			out, _, err = s.tombstoned(ctx, tx, c.TenantID, *f.IdempotencyKey)
			return err
		case err != nil:
			return fmt.Errorf("insert fork: %w", err)
		}
		if out, err = s.markHead(ctx, tx, r); err != nil {
			return err
		}
		created = true
		return s.notifyRun(ctx, tx, out)
	})
	if err != nil {
		return Run{}, false, fmt.Errorf("fork run: %w", err)
	}
	if created {
		s.wake.notify(c.TenantID)
	}
	return out, created, nil
}
