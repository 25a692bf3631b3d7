package runs

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Chain reads the continuation chain through a run in one read: at most limit runs before
// it (oldest first), the run, and at most limit after it. trimmed says the chain goes on
// past either end. apperr NotFound when the run is not the tenant's.
func (s *Service) Chain(ctx context.Context, tenantID string, runID uuid.UUID, limit int) (chain []Run, trimmed bool, err error) {
	var rows []struct {
		Run
		Pos int `db:"Pos"`
	}
	err = s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &rows, s.q.chain, tenantID, runID, limit)
	})
	if err != nil {
		return nil, false, fmt.Errorf("read the continuation chain: %w", err)
	}
	if len(rows) == 0 {
		return nil, false, apperr.New(api.CodeNotFound, "no run %s", runID)
	}
	for _, r := range rows {
		chain = append(chain, r.Run)
	}
	first, last := rows[0], rows[len(rows)-1]
	trimmed = (first.Pos == -limit && first.ContinuedFromRunID.Valid) || last.Pos == limit
	return chain, trimmed, nil
}

// ContinuationOf reads the run that continues runID (ok false when none does yet), for
// readers that follow a continuation chain forwards.
func (s *Service) ContinuationOf(ctx context.Context, tenantID string, runID uuid.UUID) (Run, bool, error) {
	r, err := s.readBy(ctx, s.q.continuation, tenantID, runID)
	if apperr.Is(err, api.CodeNotFound) {
		return Run{}, false, nil
	}
	return r, err == nil, err
}
