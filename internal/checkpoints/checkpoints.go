// Package checkpoints keeps Checkpoints (seed 001): the points an attempt can resume from.
// A holder appends them under its lease (fenced, DESIGN.md section 4), one per sequence
// number of its attempt; the attempt's LastCheckpointId follows its highest sequence; and a
// run's last checkpoint is found through the runs it continues, so a continuation resumes
// where its predecessor stopped.
package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/seqlog"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
)

// Checkpoint is one stored checkpoint of an attempt. Checkpoints never change once written,
// so they carry no version (the seed table has none) and no ETag.
type Checkpoint struct {
	CheckpointID       uuid.UUID `db:"CheckpointId"`
	AttemptID          uuid.UUID `db:"AttemptId"`
	TenantID           string    `db:"TenantId"`
	Sequence           int       `db:"Sequence"`
	Phase              api.Phase `db:"Phase"`
	AdapterStateRef    string    `db:"AdapterStateRef"`
	AdapterVersion     string    `db:"AdapterVersion"`
	ContextSnapshotRef *string   `db:"ContextSnapshotRef"`
	Hash               string    `db:"Hash"`
	CreatedAt          time.Time `db:"CreatedAt"`
}

// LastCheckpoint is a run's last checkpoint and the run it was written in: the run asked
// about, or a run it continues.
type LastCheckpoint struct {
	Checkpoint
	RunID uuid.UUID `db:"RunId"`
}

// Wire returns the checkpoint as the API sends it.
func (c Checkpoint) Wire() api.Checkpoint {
	return api.Checkpoint{CheckpointID: c.CheckpointID, AttemptID: c.AttemptID, Sequence: int32(c.Sequence),
		Phase: c.Phase, AdapterStateRef: c.AdapterStateRef, AdapterVersion: c.AdapterVersion,
		ContextSnapshotRef: c.ContextSnapshotRef, Hash: c.Hash, CreatedAt: api.NewTime(c.CreatedAt)}
}

// Wire returns the last checkpoint as the API sends it.
func (l LastCheckpoint) Wire() api.LastCheckpoint {
	return api.LastCheckpoint{Checkpoint: l.Checkpoint.Wire(), RunID: l.RunID}
}

// Draft is a checkpoint a holder appends.
type Draft struct {
	// Sequence is unique per attempt, 0..2^31-1 (the seed's int).
	Sequence           int
	Phase              api.Phase
	AdapterStateRef    string
	AdapterVersion     string
	ContextSnapshotRef *string
	// Hash identifies the checkpoint's content: a retry of the same sequence with the same
	// hash is a repeat, with another hash a conflict.
	Hash string
}

// Validate refuses a draft the columns cannot hold (Invalid naming each field), whoever
// filled it: the API's decoder checks the same bounds first for HTTP callers.
func (n Draft) Validate() error {
	fields := seqlog.SequenceFields(n.Sequence)
	if !n.Phase.Valid() {
		fields = append(fields, validate.NotOneOf("phase", n.Phase))
	}
	fields = validate.AppendTooLong(fields, "adapterStateRef", n.AdapterStateRef, 512)
	fields = validate.AppendTooLong(fields, "adapterVersion", n.AdapterVersion, 32)
	fields = validate.AppendTooLong(fields, "hash", n.Hash, 128)
	if n.ContextSnapshotRef != nil {
		fields = validate.AppendTooLong(fields, "contextSnapshotRef", *n.ContextSnapshotRef, 512)
	}
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// Store keeps checkpoints. Its writes pass the run-lease core's fence.
type Store struct {
	db   *sqldb.DB
	runs *runs.Service
	q    *queries
}

// NewStore returns the checkpoint store of db; svc fences the writes.
func NewStore(db *sqldb.DB, svc *runs.Service) *Store {
	return &Store{db: db, runs: svc, q: queriesFor(db.Dialect)}
}

// conflictMarkers name the unique index on (AttemptId, Sequence) in both dialects.
var conflictMarkers = []string{"UX_Checkpoints_Attempt_Sequence", "Checkpoints.AttemptId, Checkpoints.Sequence"}

// Append writes a checkpoint of the attempt under the lease at token; when its sequence
// is the attempt's highest, it becomes the attempt's LastCheckpointId and its phase the
// attempt's phase (a late append of a lower sequence moves neither). It reports
// created=false for an exact repeat (same sequence, same hash, same token), which answers
// with the stored row, also after the lease has ended (runs.WriteFenced). Three statements
// on the common path: the fence, the insert, the attempt's update.
// Errors: NotFound (no such attempt for this tenant), StaleLease, LeaseExpired,
// AttemptEnded, SequenceConflict (the sequence is taken by a checkpoint with another
// hash), Invalid.
func (s *Store) Append(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, n Draft) (Checkpoint, bool, error) {
	if err := n.Validate(); err != nil {
		return Checkpoint{}, false, err
	}
	return seqlog.Write(ctx, s.runs, tenantID, attemptID, token, seqlog.Append[Checkpoint]{
		What: "append checkpoint",
		Insert: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (Checkpoint, error) {
			return s.insert(ctx, tx, f, n)
		},
		AtSequence: func(ctx context.Context, tx *sqldb.Tx) (Checkpoint, error) {
			prev, err := s.bySequence(ctx, tx, tenantID, attemptID, n.Sequence)
			return prev.Checkpoint, err
		},
		Repeat: func(prev Checkpoint) (Checkpoint, error) { return repeat(prev, n) },
	})
}

// insertArgs is the insert's arguments. The statement only stores its text, so all of it
// goes as Dialect.Text: one declaration list (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, c Checkpoint) []any {
	return []any{c.CheckpointID, c.AttemptID, d.Text(c.TenantID), int32(c.Sequence), int32(c.Phase),
		d.Text(c.AdapterStateRef), d.Text(c.AdapterVersion), d.NullText(c.ContextSnapshotRef), d.Text(c.Hash), d.Time(c.CreatedAt)}
}

// insert writes the checkpoint of a fenced attempt and records it on the attempt. A
// checkpoint already at its sequence (an earlier append, or on SQL Server a concurrent one
// that committed first) makes the unique index refuse it: runs.ErrTaken, and the repeat
// rule answers.
func (s *Store) insert(ctx context.Context, tx *sqldb.Tx, f runs.Fenced, n Draft) (Checkpoint, error) {
	c := Checkpoint{
		CheckpointID: tx.Dialect.NewID(), AttemptID: f.Attempt.AttemptID, TenantID: f.Attempt.TenantID, Sequence: n.Sequence,
		Phase: n.Phase, AdapterStateRef: n.AdapterStateRef, AdapterVersion: n.AdapterVersion,
		ContextSnapshotRef: n.ContextSnapshotRef, Hash: n.Hash, CreatedAt: f.Now,
	}
	_, err := tx.ExecContext(ctx, s.q.insert, insertArgs(tx.Dialect, c)...)
	if err := seqlog.Inserted(err, "insert checkpoint", conflictMarkers...); err != nil {
		return Checkpoint{}, err
	}
	// Every append of the attempt holds the attempt row (the fence), so no other append
	// can interleave between the insert and this update.
	if err := attempts.Checkpointed(ctx, tx, c.AttemptID, c.CheckpointID, c.Sequence, c.Phase); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// repeat answers an append whose sequence is already stored.
func repeat(prev Checkpoint, n Draft) (Checkpoint, error) {
	if prev.Hash != n.Hash {
		return Checkpoint{}, apperr.New(api.CodeSequenceConflict,
			"sequence %d of this attempt is already checkpointed with another hash", n.Sequence)
	}
	return prev, nil
}

// stored is a checkpoint with the fencing token of its attempt.
type stored struct {
	Checkpoint
	AttemptToken int64 `db:"AttemptToken"`
}

// bySequence reads the attempt's checkpoint at seq; sqldb.ErrNotFound when there is none
// (or the attempt is another tenant's).
func (s *Store) bySequence(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, seq int) (stored, error) {
	var st stored
	err := tx.GetContext(ctx, &st, s.q.bySequence, tenantID, attemptID, int32(seq))
	if err != nil && !errors.Is(err, sqldb.ErrNotFound) {
		return stored{}, fmt.Errorf("read checkpoint by sequence: %w", err)
	}
	return st, err
}

// Get reads one checkpoint of an attempt (NotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, attemptID, checkpointID uuid.UUID) (Checkpoint, error) {
	return seqlog.Get(ctx, s.db, tenantID, "get checkpoint", func(tx *sqldb.Tx) (Checkpoint, error) {
		var c Checkpoint
		err := tx.GetContext(ctx, &c, s.q.get, tenantID, attemptID, checkpointID)
		if errors.Is(err, sqldb.ErrNotFound) {
			return Checkpoint{}, apperr.New(api.CodeNotFound, "no checkpoint %s of attempt %s", checkpointID, attemptID)
		}
		return c, err
	})
}

// Start is the keyset position before the first checkpoint (sequences start at 0).
const Start = seqlog.Start

// List returns up to limit checkpoints of the attempt in sequence order, after the
// sequence `after` (Start for the first page). NotFound when the attempt is not the
// tenant's.
func (s *Store) List(ctx context.Context, tenantID string, attemptID uuid.UUID, after, limit int) ([]Checkpoint, error) {
	return seqlog.List[Checkpoint](ctx, s.db, s.q.list, "list checkpoints", tenantID, attemptID, after, limit)
}

// ListTx is List inside the caller's transaction, without the attempt check (an attempt's
// timeline merges it with the other child collections).
func ListTx(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, after, limit int) ([]Checkpoint, error) {
	return seqlog.ListTx[Checkpoint](ctx, tx, queriesFor(tx.Dialect).list, "list checkpoints", tenantID, attemptID, after, limit)
}

// maxChain bounds the walk back through continued runs. Each continuation spends one
// attempt of at most 1000 (the enqueue limit), so a real chain is shorter.
const maxChain = 1024

// Last returns the last checkpoint of the run: the highest sequence of its newest attempt
// that has one. When the run has none, it is the last checkpoint of the run it continues,
// and so on back the chain, so a continued run resumes where its predecessor stopped; a
// fork (a run with no predecessor, started from a checkpoint of another run) resumes from
// the checkpoint it was forked from.
// NotFound when the run is not the tenant's, or when no run of the chain has a checkpoint
// (the detail says which).
func (s *Store) Last(ctx context.Context, tenantID string, runID uuid.UUID) (LastCheckpoint, error) {
	var out LastCheckpoint
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		id := runID
		for range maxChain {
			var link struct {
				Prev   uuid.NullUUID `db:"ContinuedFromRunId"`
				Forked uuid.NullUUID `db:"ForkedFromCheckpointId"`
			}
			err := tx.GetContext(ctx, &link, s.q.runLink, tenantID, id)
			prev := link.Prev
			if errors.Is(err, sqldb.ErrNotFound) {
				if id == runID {
					return apperr.New(api.CodeNotFound, "no run %s", runID)
				}
				// A predecessor purged by retention: the chain ends there.
				break
			}
			if err != nil {
				return fmt.Errorf("read run: %w", err)
			}
			err = tx.GetContext(ctx, &out, s.q.lastOfRun, tenantID, id)
			if err == nil {
				return nil
			}
			if !errors.Is(err, sqldb.ErrNotFound) {
				return fmt.Errorf("read last checkpoint of run: %w", err)
			}
			if !prev.Valid && link.Forked.Valid {
				err := tx.GetContext(ctx, &out, s.q.forkPoint, tenantID, link.Forked.UUID)
				if err == nil {
					return nil
				}
				if !errors.Is(err, sqldb.ErrNotFound) {
					return fmt.Errorf("read the checkpoint the run was forked from: %w", err)
				}
				break
			}
			if !prev.Valid {
				break
			}
			id = prev.UUID
		}
		if id == runID {
			return apperr.New(api.CodeNotFound, "run %s has no checkpoint and continues no run", runID)
		}
		return apperr.New(api.CodeNotFound, "neither run %s nor any run it continues has a checkpoint", runID)
	})
	if err != nil {
		return LastCheckpoint{}, fmt.Errorf("last checkpoint: %w", err)
	}
	return out, nil
}
