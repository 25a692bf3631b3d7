// Package seqlog holds what an attempt's sequenced records (calls, checkpoints) have in
// common: a holder appends them under its lease (runs.WriteFenced), one per sequence number
// of the attempt, a unique index on (AttemptId, Sequence) refuses a second one, and an
// exact repeat of a sequence answers with the stored row while another request for it is
// a conflict; they are read one by one and listed in sequence order by keyset. Each
// record's package keeps its columns, its SQL and what makes two requests the same.
package seqlog

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Start is the keyset position before the first record (sequences start at 0).
const Start = -1

// SequenceFields refuses a sequence the column cannot hold (the seed's int, from 0): one
// field error naming sequence, or none.
func SequenceFields(seq int) []api.FieldError {
	if seq < 0 || seq > math.MaxInt32 {
		return []api.FieldError{{Field: "sequence", Reason: "must be from 0 to 2147483647"}}
	}
	return nil
}

// Append is one fenced append of a record at a sequence.
type Append[T any] struct {
	// What names the write in errors ("record call").
	What string
	// Insert writes the record in the fenced transaction; runs.ErrTaken when the sequence
	// is taken (Inserted maps the unique index's refusal to it).
	Insert func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (T, error)
	// AtSequence reads the record stored at the appended sequence; sqldb.ErrNotFound when
	// there is none.
	AtSequence func(ctx context.Context, tx *sqldb.Tx) (T, error)
	// Repeat answers with the stored record when the append repeats it, else the conflict.
	Repeat func(prev T) (T, error)
}

// Write runs a under the lease of the attempt at token (runs.WriteFenced): created=false
// for a repeat, which is answered also after the lease has ended.
func Write[T any](ctx context.Context, svc *runs.Service, tenantID string, attemptID uuid.UUID, token int64, a Append[T]) (T, bool, error) {
	return runs.WriteFenced(ctx, svc, tenantID, attemptID, token, runs.FencedWrite[T]{
		What: a.What,
		Do: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (T, bool, error) {
			row, err := a.Insert(ctx, tx, f)
			return row, err == nil, err
		},
		Repeat: func(ctx context.Context, tx *sqldb.Tx, _ runs.Fenced) (T, error) {
			prev, err := a.AtSequence(ctx, tx)
			if errors.Is(err, sqldb.ErrNotFound) {
				var zero T
				return zero, runs.ErrNoRepeat
			}
			if err != nil {
				var zero T
				return zero, err
			}
			return a.Repeat(prev)
		},
	})
}

// Inserted maps an insert's error: the unique index on the attempt's sequence (named by
// markers, one per dialect) refusing it is runs.ErrTaken, so the repeat rule answers; any
// other error is wrapped with what.
func Inserted(err error, what string, markers ...string) error {
	if sqldb.IsConflict(err, markers...) {
		return runs.ErrTaken
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Get reads one record in a read transaction of the tenant; errors are wrapped with what.
func Get[T any](ctx context.Context, db *sqldb.DB, tenantID, what string, read func(tx *sqldb.Tx) (T, error)) (T, error) {
	var row T
	err := db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		row, err = read(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return row, nil
}

// List returns up to limit records of the attempt in sequence order after the sequence
// after (Start for the first page), read by query (arguments: tenant, attempt, after as
// int32, limit). api.CodeNotFound when the attempt is not the tenant's.
func List[T any](ctx context.Context, db *sqldb.DB, query, what, tenantID string, attemptID uuid.UUID, after, limit int) ([]T, error) {
	return attempts.ListOf(ctx, db, tenantID, attemptID, what, func(tx *sqldb.Tx) ([]T, error) {
		return ListTx[T](ctx, tx, query, what, tenantID, attemptID, after, limit)
	})
}

// ListTx is List inside the caller's transaction, without the attempt check (an attempt's
// timeline merges it with the other child collections). A position past the sequences'
// range (the seed's int) reads nothing.
func ListTx[T any](ctx context.Context, tx *sqldb.Tx, query, what, tenantID string, attemptID uuid.UUID, after, limit int) ([]T, error) {
	after = max(after, Start)
	if after > math.MaxInt32 {
		return nil, nil
	}
	var rows []T
	if err := tx.SelectContext(ctx, &rows, query, tenantID, attemptID, int32(after), limit); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return rows, nil
}
