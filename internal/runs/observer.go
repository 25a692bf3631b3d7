package runs

import (
	"errors"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// ClaimOutcome is what one claim transaction came to.
type ClaimOutcome string

// Claim outcomes, as the metrics label them.
const (
	ClaimLeased     ClaimOutcome = "leased"
	ClaimEmpty      ClaimOutcome = "empty"
	ClaimBudgetHold ClaimOutcome = "budget_hold"
	// ClaimCostHold is a claim that found due runs only in projects whose daily cost budget
	// is reached.
	ClaimCostHold ClaimOutcome = "cost_hold"
	// ClaimRefused is a claim refused for what it asks (a release that is not active, an
	// unknown project): the runtime's configuration, not the service's health, so it is
	// kept out of "error", the outcome operators page on.
	ClaimRefused ClaimOutcome = "refused"
	ClaimError   ClaimOutcome = "error"
)

// Observer hears what the lease core did, for metrics. It is told after the fact, outside
// any transaction, so it never slows a commit; its methods must be quick and must not block.
type Observer interface {
	// Claimed: one claim transaction (a long poll that looks again makes several) ended
	// with outcome after took.
	Claimed(tenantID string, outcome ClaimOutcome, took time.Duration)
	// TakeBack: the reaper tried to take back an expired lease of tenantID; took says it
	// did (the attempt is lost), err that the take-back failed and will be tried again.
	TakeBack(tenantID string, took bool, err error)
}

// SetObserver sets the observer; call it while wiring, before the service is used.
func (s *Service) SetObserver(o Observer) { s.obs = o }

// observeClaim runs one claim transaction and tells the observer how it went.
func (s *Service) observeClaim(tenantID string, claim func() (Claimed, error)) (Claimed, error) {
	start := time.Now()
	cl, err := claim()
	if s.obs != nil {
		var held *BudgetHeldError
		outcome := ClaimError
		switch {
		case err == nil:
			outcome = ClaimLeased
		case errors.Is(err, ErrNothingToClaim):
			outcome = ClaimEmpty
		case errors.As(err, &held) && held.Cost:
			outcome = ClaimCostHold
		case errors.As(err, &held):
			outcome = ClaimBudgetHold
		case refusedClaim(err):
			outcome = ClaimRefused
		}
		s.obs.Claimed(tenantID, outcome, time.Since(start))
	}
	return cl, err
}

// refusedClaim reports whether a claim failed with a code that blames the request rather than
// the service: any coded error but internal and database_unavailable.
func refusedClaim(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Code != api.CodeInternal && e.Code != api.CodeDatabaseUnavailable
}

func (s *Service) observeTakeBack(tenantID string, took bool, err error) {
	if s.obs != nil {
		s.obs.TakeBack(tenantID, took, err)
	}
}
