package runs

import (
	"context"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// ContinuationOf reads the run that continues runID (ok false when none does yet), for
// readers that follow a continuation chain forwards (the console's run page).
func (s *Service) ContinuationOf(ctx context.Context, tenantID string, runID uuid.UUID) (Run, bool, error) {
	var r Run
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		r, err = s.getBy(ctx, tx, s.q.continuation, tenantID, runID)
		return err
	})
	if apperr.Is(err, apperr.NotFound) {
		return Run{}, false, nil
	}
	return r, err == nil, err
}
