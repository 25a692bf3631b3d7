package runs

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Hooks let the ledger's other parts keep their rows in step with runs and attempts inside
// the same transactions that move them, without the run-lease core importing them. Each
// hook runs under the transaction's locks (attempt, then run); an error rolls the whole
// write back. Nil hooks are skipped.
type Hooks struct {
	// CheckClaim refuses a claim before it leases anything (e.g. the release it names is
	// not active for the tenant). It runs after the tenant row is locked.
	CheckClaim func(ctx context.Context, tx *sqldb.Tx, tenantID string, req ClaimRequest) error
	// AttemptEnded runs when an attempt ends in any way (complete, release, lost).
	AttemptEnded func(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, now time.Time) error
	// RunChanged runs after a run is created or changes state (enqueue, claim, requeue,
	// end, continuation), with the run as it now is. When the run leaves a lease (requeued,
	// or ended by its holder or the reaper) only these are read (leaveLease has them from the
	// fence, from what it wrote, and from runTable's left columns): RunId, TenantId,
	// ProjectId, Subject, Kind, AgentId, State, Attempt, EndedAt, Outcome, ErrorCode,
	// ParentRunId, ContinuedFromRunId. A hook reads no other field of the run.
	RunChanged func(ctx context.Context, tx *sqldb.Tx, run Run) error
}

// AddHooks adds hooks; call it while wiring, before the service is used.
func (s *Service) AddHooks(h Hooks) { s.hooks = append(s.hooks, h) }

func (s *Service) checkClaim(ctx context.Context, tx *sqldb.Tx, tenantID string, req ClaimRequest) error {
	for _, h := range s.hooks {
		if h.CheckClaim != nil {
			if err := h.CheckClaim(ctx, tx, tenantID, req); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) attemptEnded(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, now time.Time) error {
	k := AttemptKey(tenantID, attemptID)
	tx.AfterCommit(func() { s.waits.Notify(k) })
	for _, h := range s.hooks {
		if h.AttemptEnded != nil {
			if err := h.AttemptEnded(ctx, tx, tenantID, attemptID, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// notifyRun tells the hooks of a run the caller has just read as it now is.
func (s *Service) notifyRun(ctx context.Context, tx *sqldb.Tx, run Run) error {
	if run.State == api.RunEnded {
		k := RunKey(run.TenantID, run.RunID)
		tx.AfterCommit(func() { s.waits.Notify(k) })
		if err := s.runEnded(ctx, tx, run); err != nil {
			return err
		}
	}
	for _, h := range s.hooks {
		if h.RunChanged != nil {
			if err := h.RunChanged(ctx, tx, run); err != nil {
				return err
			}
		}
	}
	return nil
}
