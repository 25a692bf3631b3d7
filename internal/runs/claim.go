package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// ClaimRequest is what a claim asks for.
type ClaimRequest struct {
	HolderID       string
	ReleaseID      string
	AdapterVersion string
	ModelProfileID string
	// LeaseSeconds, when zero, is the configured lease TTL.
	LeaseSeconds int
	// Wait is how long to wait for work when none is due (long poll).
	Wait       time.Duration
	Kinds      []string
	AgentIDs   []string
	ProjectIDs []string
}

// Claimed is a successful claim: the run, its new attempt and the lease.
type Claimed struct {
	Run     Run
	Attempt attempts.Attempt
	Lease   Lease
}

// ErrNothingToClaim says no run is due for this claim (HTTP 204).
var ErrNothingToClaim = errors.New("nothing to claim")

// BudgetHeldError says the tenant holds its MaxLeasedRuns already, or (Cost) that the due
// runs wait only in projects whose daily cost budget is reached (HTTP 204 with Retry-After).
type BudgetHeldError struct {
	RetryAfter time.Duration
	Cost       bool
}

func (e *BudgetHeldError) Error() string {
	if e.Cost {
		return "the due runs are in projects whose daily cost budget is reached"
	}
	return "the tenant's leased-run budget is used up"
}

// Claim leases one due run of the tenant, waiting up to req.Wait for one. It returns
// ErrNothingToClaim or a *BudgetHeldError when it leases nothing.
func (s *Service) Claim(ctx context.Context, c Caller, req ClaimRequest) (Claimed, error) {
	deadline := time.Now().Add(req.Wait)
	filtered := len(req.Kinds) > 0 || len(req.AgentIDs) > 0 || len(req.ProjectIDs) > 0
	// woke says this look answers a wake (the notifier's), hops what is left of its budget.
	woke, hops := false, 0
	for {
		// Subscribe before looking, so a notice between the look and the wait is not missed.
		w := s.wake.wait(c.TenantID)
		cl, err := s.look(ctx, c, req, w)
		nothing := errors.Is(err, ErrNothingToClaim)
		switch {
		case !woke:
		case err == nil:
			// The notice may stand for more than this run: the next claimer looks.
			s.wake.notify(c.TenantID)
		case !nothing || filtered:
			// The work the wake announced may be another claimer's: one with other filters,
			// or one this claimer's refusal (a budget hold, a release not active) does not
			// stop. Only a claim without filters that finds nothing shows there is none.
			s.wake.handOn(c.TenantID, hops-1)
		}
		if !nothing {
			// A wake that came during the look is not this claimer's to use any more.
			s.wake.quit(c.TenantID, w)
			return cl, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			s.wake.quit(c.TenantID, w)
			return Claimed{}, err
		}
		t := time.NewTimer(min(left, s.cfg.PollInterval))
		select {
		case <-ctx.Done():
			s.wake.quit(c.TenantID, w)
			t.Stop()
			return Claimed{}, ErrNothingToClaim
		case <-s.waits.Closing():
			// The server is shutting down (StopWaits): answer now, not at the end of the
			// grace.
			s.wake.quit(c.TenantID, w)
			t.Stop()
			return Claimed{}, ErrNothingToClaim
		case hops = <-w.woken:
			woke = true
		case <-t.C:
			// Looking again anyway: a wake that came meanwhile is answered by this look.
			hops, woke = s.wake.leave(c.TenantID, w)
		}
		t.Stop()
	}
}

// look is one claim transaction of a claim whose waiter w is in the tenant's line. A panic
// (a hook, the driver) takes w out of the line before it goes on up: a waiter left there
// would take the next wake to nobody.
func (s *Service) look(ctx context.Context, c Caller, req ClaimRequest, w *waiter) (Claimed, error) {
	defer func() {
		if p := recover(); p != nil {
			s.wake.quit(c.TenantID, w)
			panic(p)
		}
	}()
	return s.observeClaim(c.TenantID, func() (Claimed, error) { return s.claimOnce(ctx, c, req) })
}

// budget is what claimStart reads: the database clock (SQL Server), the tenant's budget
// and its leased count.
type budget struct {
	Now           sqldb.NullTime `db:"Now"`
	MaxLeasedRuns int            `db:"MaxLeasedRuns"`
	LeasedCount   int            `db:"LeasedCount"`
}

// maxSkips bounds the candidates one band's seek may pass over when they turn out not to
// be leasable any more (ended, or no longer the head, while the claim waited for the
// subject lock; or a leased-subject violation): each costs a seek.
const maxSkips = 3

// claimOnce is one claim transaction. In order: the tenant row (the budget hold: every
// claim of the tenant queues there, and one past the budget leases nothing and takes no
// epoch), the release check, then per effective band one seek of the subject heads
// (fairness window, project load, age), the subject lock of the pick, the lease, the new
// attempt and, last, the counters. Statements on SQLite: claimStart, the release hook's,
// one seek per band tried, lease, clearWaits, the attempt, two counters: 8 for a claim of
// the first band tried.
func (s *Service) claimOnce(ctx context.Context, c Caller, req ClaimRequest) (Claimed, error) {
	leaseSeconds := req.LeaseSeconds
	if leaseSeconds <= 0 {
		leaseSeconds = int(s.cfg.LeaseTTL / time.Second)
	}
	kinds, agents, projects := s.jsonList(req.Kinds), s.jsonList(req.AgentIDs), s.jsonList(req.ProjectIDs)
	var out Claimed
	// The scope travels with claimStart: one round trip on SQL Server.
	err := s.db.Write(ctx, sqldb.TenantScopeInFirstRoundTrip(c.TenantID), func(tx *sqldb.Tx) error {
		var b budget
		if err := tx.GetContext(ctx, &b, s.q.claimStart, c.TenantID); err != nil {
			return fmt.Errorf("lock tenant: %w", err)
		}
		if b.Now.Valid {
			tx.SeedNow(b.Now.Time)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if b.LeasedCount >= b.MaxLeasedRuns {
			return &BudgetHeldError{RetryAfter: s.cfg.PollInterval}
		}
		if err := s.checkClaim(ctx, tx, c.TenantID, req); err != nil {
			return err
		}
		aged := now.Add(-s.cfg.BandAging)
		var skipped []string
		for _, query := range s.q.claimCandidates {
			for try := 0; try <= maxSkips; try++ {
				// The pick's RunId and Subject, or (leaseUnanswered) its whole row.
				var cand Run
				err := tx.GetContext(ctx, &cand, query, c.TenantID, tx.Dialect.Time(now), tx.Dialect.Time(aged),
					s.cfg.FairnessWindow, kinds, agents, projects, s.jsonList(skipped))
				if errors.Is(err, sqldb.ErrNotFound) {
					break
				}
				if err != nil {
					return fmt.Errorf("find claimable run: %w", err)
				}
				out, err = s.lease(ctx, tx, c, req, cand, leaseSeconds, now)
				if sqldb.IsConflict(err, s.leasedSubjectMarkers()...) {
					// Another run of the subject is leased (UX_Runs_LeasedSubject refused the
					// lease): the marker said otherwise, so make it right again (this claim
					// holds the subject lock) before seeking on.
					if _, err := s.syncHead(ctx, tx, c.TenantID, cand.Subject); err != nil {
						return err
					}
					err = errNotLeasable
				}
				if errors.Is(err, errNotLeasable) {
					// Ended or no longer the head since the seek (SQL Server: while this claim
					// waited for the subject lock), or its subject is leased: seek the band
					// again without it.
					skipped = append(skipped, cand.RunID.String())
					continue
				}
				return err
			}
		}
		return s.nothingOrCostHeld(ctx, tx, c.TenantID, now, projects)
	})
	return out, err
}

// nothingOrCostHeld tells a claim that found nothing from one whose due runs wait in
// projects held by their daily cost budget (eligibility leaves those out): the held claim
// answers at once with Retry-After, as the tenant's budget hold does. One seek of the
// tenant's cost counters of the day, so only projects that spent today are read.
func (s *Service) nothingOrCostHeld(ctx context.Context, tx *sqldb.Tx, tenantID string, now time.Time, projects any) error {
	var held int
	err := tx.GetContext(ctx, &held, s.q.costHeld, tenantID, tx.Dialect.Time(now), projects)
	switch {
	case errors.Is(err, sqldb.ErrNotFound):
		return ErrNothingToClaim
	case err != nil:
		return fmt.Errorf("look for cost-held projects: %w", err)
	}
	return &BudgetHeldError{RetryAfter: s.cfg.PollInterval, Cost: true}
}

// leaseArgs is the lease's arguments. HolderId is only stored, so it goes as Dialect.Text:
// one declaration list (SQL Server's plan-cache key) whatever the holder's length.
func leaseArgs(d sqldb.Dialect, tenantID string, runID uuid.UUID, holderID string, leaseSeconds int, until time.Time) []any {
	// Room for leaseUnanswered's stamp.
	args := make([]any, 0, 6)
	return append(args, tenantID, runID, d.Text(holderID), leaseSeconds, d.Time(until))
}

// errNotLeasable: the pick is no longer a queued head.
var errNotLeasable = errors.New("the run is no longer a queued head")

// lease leases the claim's pick cand (queries.lease, or leaseUnanswered and cand).
func (s *Service) lease(ctx context.Context, tx *sqldb.Tx, c Caller, req ClaimRequest, cand Run, leaseSeconds int, now time.Time) (Claimed, error) {
	if err := s.lockSubject(ctx, tx, c.TenantID, cand.Subject); err != nil {
		return Claimed{}, err
	}
	until := now.Add(time.Duration(leaseSeconds) * time.Second)
	args := leaseArgs(tx.Dialect, c.TenantID, cand.RunID, req.HolderID, leaseSeconds, until)
	var run Run
	var err error
	// attemptStamp: the stamp the attempt's insert takes, known where the lease wrote the
	// stamp its pick read (leaseUnanswered: the lease is the claim's first write, and the
	// insert its next stamped one, clearWaits writing no stamp); 0 where the insert answers it.
	var attemptStamp sqldb.RowVersion
	if s.q.lease != "" {
		err = tx.GetContext(ctx, &run, s.q.lease, args...)
	} else {
		run, err = leaseUnanswered(ctx, tx, s.q.leaseUnanswered, append(args, cand.Version), cand, req.HolderID, leaseSeconds, until)
		attemptStamp = cand.Version + 1
	}
	if errors.Is(err, sqldb.ErrNotFound) {
		return Claimed{}, errNotLeasable
	}
	if err != nil {
		return Claimed{}, err
	}
	// The leased run was its subject's head, and its subject now has a leased run: no head,
	// which the lease itself wrote (SubjectHead = 0). No marker to move.
	// A leased run waits on nothing. A parked run is leased only once its conditions closed
	// (their rows went with them) or its dueAt passed: then the conditions still open are
	// no longer its, and rows left behind would count it waiting when it is queued again, make
	// a later answer move its retry's due time, and outlive its end. One PK_RunWaits range
	// of this run, empty for a run never parked, under the run's lock (run, then its waits:
	// the order closeWaits takes). A run at epoch 0 before this lease was never leased (a
	// lease is what moves the epoch, and only up), so never parked: waits are written only
	// under a lease (a holder's park, the reaper's): no statement then.
	if run.Epoch > 1 {
		if _, err := tx.ExecContext(ctx, s.q.clearWaits, c.TenantID, run.RunID); err != nil {
			return Claimed{}, fmt.Errorf("clear the waits of a run woken by time: %w", err)
		}
	}
	a, err := attempts.InsertStamped(ctx, tx, attempts.Attempt{
		AttemptID: tx.Dialect.NewID(), RunID: run.RunID, StepID: run.StepID, TenantID: c.TenantID, ProjectID: run.ProjectID,
		EnvironmentID: run.EnvironmentID, LeaseID: tx.Dialect.NewID(), FencingToken: run.Epoch, SnapshotID: run.SnapshotID,
		ReleaseID: req.ReleaseID, AdapterVersion: req.AdapterVersion, AgentID: run.AgentID,
		ModelProfileID: req.ModelProfileID, State: api.AttemptRunning, Phase: api.PhaseStarting,
		MaxCorrections: run.MaxCorrections, StartedAt: now,
	}, attemptStamp)
	if err != nil {
		return Claimed{}, err
	}
	if err := s.notifyRun(ctx, tx, run); err != nil {
		return Claimed{}, err
	}
	// The counters come last (queries_mssql.go, lock order): the hooks above may wait on
	// another run's attempt, whose own transaction may be waiting for these counters.
	if err := s.countLease(ctx, tx, run, +1); err != nil {
		return Claimed{}, err
	}
	return Claimed{Run: run, Attempt: a, Lease: Lease{LeaseID: a.LeaseID, FencingToken: run.Epoch, LeasedUntil: until}}, nil
}

// leaseUnanswered runs query (queries.leaseUnanswered) and answers the run it leased: cand,
// the row as the claim's candidate read it with the stamp the lease wrote, with the columns
// the lease set as it set them. sqldb.ErrNotFound when it leased nothing.
func leaseUnanswered(ctx context.Context, tx *sqldb.Tx, query string, args []any, cand Run, holderID string, leaseSeconds int, until time.Time) (Run, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return Run{}, err
	}
	switch n, err := res.RowsAffected(); {
	case err != nil:
		return Run{}, err
	case n == 0:
		return Run{}, sqldb.ErrNotFound
	case n != 1:
		return Run{}, fmt.Errorf("lease run %s: changed %d rows, want 1", cand.RunID, n)
	}
	run, leasedUntil := cand, sqldb.Truncate(until)
	run.State, run.Epoch = api.RunLeased, cand.Epoch+1
	run.HolderID, run.LeaseSeconds, run.LeasedUntil = &holderID, &leaseSeconds, &leasedUntil
	return run, nil
}

// jsonList is a JSON array of xs ([] for none: no filter) as the dialect takes it.
func (s *Service) jsonList(xs []string) any {
	if len(xs) == 0 {
		return s.db.Dialect.JSON("[]")
	}
	b, _ := json.Marshal(xs)
	return s.db.Dialect.JSON(string(b))
}
