package runs

import (
	"context"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// ContinuationOf reads the run that continues runID (ok false when none does yet), for
// readers that follow a continuation chain forwards (the console's run page).
func (s *Service) ContinuationOf(ctx context.Context, tenantID string, runID uuid.UUID) (Run, bool, error) {
	r, err := s.readBy(ctx, s.q.continuation, tenantID, runID)
	if apperr.Is(err, api.CodeNotFound) {
		return Run{}, false, nil
	}
	return r, err == nil, err
}
