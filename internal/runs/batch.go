package runs

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Live reports whether r still holds its place as work: queued (a parked run waiting for
// its decisions or children is queued too), or leased. It is the one liveness rule of
// whoever asks "is the previous run still going" (a schedule's overlap skip): a state that
// later also counts as live is added here.
func Live(r Run) bool { return r.State != api.RunEnded }

// LiveTx reads run id of tenantID in tx and reports whether it is live (Live); a run that
// is gone (purged) is not.
func (s *Service) LiveTx(ctx context.Context, tx *sqldb.Tx, tenantID string, id uuid.UUID) (bool, error) {
	r, err := s.getBy(ctx, tx, s.q.get, tenantID, id)
	if apperr.Is(err, api.CodeNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return Live(r), nil
}

// BatchItem is one run of a batch as enqueued: created, or an exact repeat of an earlier
// enqueue (Existing).
type BatchItem struct {
	Run      Run
	Existing bool
}

// EnqueueBatch enqueues every spec or none, in one transaction, each with its own
// idempotency (an exact repeat answers its existing run). A refusal names the item: field
// errors are renamed items[i].field, and any other coded refusal (unknown_project,
// idempotency_key_reused, loop_depth) keeps its code and lists items[i] with the field it
// concerns. Claimers are woken once, after the commit.
func (s *Service) EnqueueBatch(ctx context.Context, c Caller, specs []Spec) ([]BatchItem, error) {
	var out []BatchItem
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		out = make([]BatchItem, 0, len(specs))
		for i, spec := range specs {
			r, created, err := s.EnqueueTx(ctx, tx, c, spec)
			if err != nil {
				return itemError(i, err)
			}
			out = append(out, BatchItem{Run: r, Existing: !created})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", err)
	}
	for _, it := range out {
		if !it.Existing {
			s.wake.notify(c.TenantID)
			break
		}
	}
	return out, nil
}

// itemFields are the fields a coded enqueue refusal concerns, for naming them in a batch.
var itemFields = map[api.ProblemCode]string{
	api.CodeUnknownProject:       "projectId",
	api.CodeIdempotencyKeyReused: "idempotencyKey",
	api.CodeLoopDepth:            "parentRunId",
	api.CodeNotFound:             "parentRunId",
}

// itemError names item i in an enqueue refusal.
func itemError(i int, err error) error {
	e, ok := apperr.As(err)
	if !ok {
		return err
	}
	prefix := fmt.Sprintf("items[%d]", i)
	named := &apperr.Error{Code: e.Code, Detail: prefix + ": " + e.Detail, RetryAfter: e.RetryAfter}
	for _, f := range e.Fields {
		named.Fields = append(named.Fields, api.FieldError{Field: prefix + "." + f.Field, Reason: f.Reason})
	}
	if len(named.Fields) == 0 {
		if f, ok := itemFields[e.Code]; ok {
			named.Fields = []api.FieldError{{Field: prefix + "." + f, Reason: strings.TrimPrefix(e.Detail, string(e.Code)+": ")}}
		}
	}
	return named
}
