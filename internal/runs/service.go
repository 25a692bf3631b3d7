package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Service is the run-lease core over one database. It is safe for concurrent use and
// holds no state that another replica would need: the wake-ups it keeps only shorten
// long polls on this replica.
type Service struct {
	db     *sqldb.DB
	q      *queries
	cfg    Config
	log    *slog.Logger
	wake   *notifier
	jitter func() float64
	hooks  []Hooks
	obs    Observer // metrics (observer.go); nil: none
}

// NewService returns the run-lease core.
func NewService(db *sqldb.DB, cfg Config, log *slog.Logger) *Service {
	def := DefaultConfig()
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = def.LeaseTTL
	}
	if cfg.BandAging <= 0 {
		cfg.BandAging = def.BandAging
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = def.MaxDepth
	}
	if cfg.FairnessWindow <= 0 {
		cfg.FairnessWindow = def.FairnessWindow
	}
	if cfg.ReaperInterval <= 0 {
		cfg.ReaperInterval = def.ReaperInterval
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = def.PollInterval
	}
	if cfg.ReaperBatch <= 0 {
		cfg.ReaperBatch = def.ReaperBatch
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{db: db, q: queriesFor(db.Dialect), cfg: cfg, log: log, wake: newNotifier(), jitter: rand.Float64}
}

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// Spec is what an enqueue asks for. Times are optional; zero values take defaults.
type Spec struct {
	ProjectID      string
	EnvironmentID  *string
	Subject        string
	Kind           string
	AgentID        string
	StepID         uuid.UUID
	SnapshotID     uuid.UUID
	Input          JSONText
	Band           Band
	MaxAttempts    int
	MaxCorrections int
	DueAt          *time.Time
	DeadlineAt     *time.Time
	IdempotencyKey *string
	ParentRunID    *uuid.UUID
}

// Caller is who asks: the tenant and the key (recorded as CreatedBy).
type Caller struct {
	TenantID string
	KeyID    string
}

// Enqueue queues a run. It reports created=false when the idempotency key already named a
// run, which it returns whatever this spec says. Errors: UnknownProject, LoopDepth,
// Invalid (parent run not found).
func (s *Service) Enqueue(ctx context.Context, c Caller, spec Spec) (Run, bool, error) {
	var (
		run     Run
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		var err error
		run, created, err = s.EnqueueTx(ctx, tx, c, spec)
		return err
	})
	if err != nil {
		return Run{}, false, fmt.Errorf("enqueue run: %w", err)
	}
	if created {
		s.wake.notify(c.TenantID)
	}
	return run, created, nil
}

// EnqueueTx is Enqueue inside the caller's transaction (a delegation enqueues its child
// with its own row). The caller must wake claimers after commit with Woke.
func (s *Service) EnqueueTx(ctx context.Context, tx *sqldb.Tx, c Caller, spec Spec) (Run, bool, error) {
	if spec.IdempotencyKey != nil {
		if r, err := s.getBy(ctx, tx, s.q.byIdempotency, c.TenantID, *spec.IdempotencyKey); err == nil {
			return r, false, nil
		} else if !apperr.Is(err, apperr.NotFound) {
			return Run{}, false, err
		}
		var tomb struct {
			RunID    uuid.UUID `db:"RunId"`
			PurgedAt time.Time `db:"PurgedAt"`
		}
		err := tx.GetContext(ctx, &tomb, s.q.tombstone, c.TenantID, *spec.IdempotencyKey)
		if err == nil {
			return Run{RunID: tomb.RunID, TenantID: c.TenantID, State: Ended, IdempotencyKey: spec.IdempotencyKey,
				EndedAt: &tomb.PurgedAt, Purged: true}, false, nil
		}
		if !errors.Is(err, sqldb.ErrNotFound) {
			return Run{}, false, fmt.Errorf("read tombstone: %w", err)
		}
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Run{}, false, err
	}
	var active bool
	err = tx.GetContext(ctx, &active, s.q.projectActive, c.TenantID, spec.ProjectID)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Run{}, false, apperr.New(apperr.UnknownProject, "project %q does not exist", spec.ProjectID)
	}
	if err != nil {
		return Run{}, false, err
	}
	depth := 0
	var parent any
	if spec.ParentRunID != nil {
		p, err := s.getBy(ctx, tx, s.q.get, c.TenantID, *spec.ParentRunID)
		if apperr.Is(err, apperr.NotFound) {
			return Run{}, false, apperr.FieldsInvalid(apperr.FieldError{Field: "parentRunId", Reason: "names no run"})
		}
		if err != nil {
			return Run{}, false, err
		}
		depth = p.Depth + 1
		if depth > s.cfg.MaxDepth {
			return Run{}, false, apperr.New(apperr.LoopDepth, "a run at depth %d may not enqueue another: the limit is %d", p.Depth, s.cfg.MaxDepth)
		}
		parent = *spec.ParentRunID
	}
	due := now
	if spec.DueAt != nil {
		due = sqldb.Truncate(*spec.DueAt)
	}
	id := ids.New()
	_, err = tx.ExecContext(ctx, s.q.insert, id, c.TenantID, spec.ProjectID, spec.EnvironmentID, spec.Subject,
		spec.Kind, spec.AgentID, spec.StepID, spec.SnapshotID, spec.Input, int(spec.Band), 0, 0, spec.MaxAttempts,
		spec.MaxCorrections, tx.Dialect.Time(now), tx.Dialect.Time(due), tx.Dialect.NullTime(spec.DeadlineAt), spec.IdempotencyKey,
		parent, depth, nil, c.KeyID)
	if spec.IdempotencyKey != nil && sqldb.IsConflict(err, s.idempotencyMarkers()...) {
		// A concurrent enqueue with the same key won: answer with its run. The caller's
		// transaction is still usable on both dialects after a unique violation.
		r, gerr := s.getBy(ctx, tx, s.q.byIdempotency, c.TenantID, *spec.IdempotencyKey)
		return r, false, gerr
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("insert run: %w", err)
	}
	r, err := s.getBy(ctx, tx, s.q.get, c.TenantID, id)
	if err != nil {
		return Run{}, false, err
	}
	return r, true, s.notifyRun(ctx, tx, r)
}

// Woke tells claimers on this replica that tenant has new work (after a commit).
func (s *Service) Woke(tenantID string) { s.wake.notify(tenantID) }

func (s *Service) idempotencyMarkers() []string {
	return []string{"UX_Runs_Idempotency", "Runs.TenantId, Runs.IdempotencyKey"}
}

func (s *Service) leasedSubjectMarkers() []string {
	return []string{"UX_Runs_LeasedSubject", "Runs.TenantId, Runs.Subject"}
}

func (s *Service) getBy(ctx context.Context, tx *sqldb.Tx, query string, args ...any) (Run, error) {
	var r Run
	err := tx.GetContext(ctx, &r, query, args...)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Run{}, apperr.New(apperr.NotFound, "no such run")
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run: %w", err)
	}
	return r, nil
}

// Get reads a run of the tenant (NotFound when missing or another tenant's).
func (s *Service) Get(ctx context.Context, tenantID string, id uuid.UUID) (Run, error) {
	var r Run
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		r, err = s.getBy(ctx, tx, s.q.get, tenantID, id)
		return err
	})
	return r, err
}

// ListFilter narrows a run listing.
type ListFilter struct {
	State     *State
	Subject   *string
	ProjectID *string
	Kind      *string
	AgentID   *string
	// QueuedFrom keeps runs queued at or after it. An upper bound is a keyset position:
	// AfterQueuedAt with AfterRunID uuid.Nil keeps runs queued before it.
	QueuedFrom *time.Time
	// After is the keyset position: runs queued before it (newest first).
	AfterQueuedAt *time.Time
	AfterRunID    uuid.UUID
	Limit         int
}

// List lists the tenant's runs, newest first.
func (s *Service) List(ctx context.Context, tenantID string, f ListFilter) ([]Run, error) {
	var rs []Run
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var state any
		if f.State != nil {
			state = int(*f.State)
		}
		var afterRun any
		if f.AfterQueuedAt != nil {
			afterRun = f.AfterRunID
		}
		return tx.SelectContext(ctx, &rs, s.q.list, tenantID, state, f.Subject, f.ProjectID, f.Kind,
			tx.Dialect.NullTime(f.AfterQueuedAt), afterRun, f.Limit, f.AgentID, tx.Dialect.NullTime(f.QueuedFrom))
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return rs, nil
}

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
	Run     Run              `json:"run"`
	Attempt attempts.Attempt `json:"attempt"`
	Lease   Lease            `json:"lease"`
}

// ErrNothingToClaim: no run is due for this claim (HTTP 204).
var ErrNothingToClaim = errors.New("nothing to claim")

// BudgetHeldError: the tenant holds its MaxLeasedRuns already (HTTP 204 with Retry-After).
type BudgetHeldError struct{ RetryAfter time.Duration }

func (e *BudgetHeldError) Error() string { return "the tenant's leased-run budget is used up" }

// Claim leases one due run of the tenant, waiting up to req.Wait for one. It returns
// ErrNothingToClaim or a *BudgetHeldError when it leases nothing.
func (s *Service) Claim(ctx context.Context, c Caller, req ClaimRequest) (Claimed, error) {
	deadline := time.Now().Add(req.Wait)
	for {
		// Subscribe before looking, so an enqueue between the look and the wait is not missed.
		woken := s.wake.wait(c.TenantID)
		cl, err := s.observeClaim(c.TenantID, func() (Claimed, error) { return s.claimOnce(ctx, c, req) })
		if !errors.Is(err, ErrNothingToClaim) {
			return cl, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Claimed{}, err
		}
		t := time.NewTimer(min(left, s.cfg.PollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return Claimed{}, ErrNothingToClaim
		case <-woken:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) claimOnce(ctx context.Context, c Caller, req ClaimRequest) (Claimed, error) {
	leaseSeconds := req.LeaseSeconds
	if leaseSeconds <= 0 {
		leaseSeconds = int(s.cfg.LeaseTTL / time.Second)
	}
	kinds, agents, projects := jsonList(req.Kinds), jsonList(req.AgentIDs), jsonList(req.ProjectIDs)
	var out Claimed
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		// The budget hold: lock the tenant row first (every claim of the tenant queues here),
		// then count its leased runs. A claim past the budget runs nothing and takes no epoch.
		var maxLeased int
		if err := tx.GetContext(ctx, &maxLeased, s.q.lockTenant, c.TenantID); err != nil {
			return fmt.Errorf("lock tenant: %w", err)
		}
		var leased int
		if err := tx.GetContext(ctx, &leased, s.q.countLeased, c.TenantID); err != nil {
			return fmt.Errorf("count leased runs: %w", err)
		}
		if leased >= maxLeased {
			return &BudgetHeldError{RetryAfter: s.cfg.PollInterval}
		}
		if err := s.checkClaim(ctx, tx, c.TenantID, req); err != nil {
			return err
		}
		aged := now.Add(-s.cfg.BandAging)
		var skip any
		for _, query := range s.q.claimCandidates {
			// A candidate that loses the leased-subject index to a concurrent claim (SQL Server
			// only: SQLite serialises claims) is skipped, and the band is sought again.
			for try := 0; try < 3; try++ {
				var runID uuid.UUID
				err := tx.GetContext(ctx, &runID, query, c.TenantID, tx.Dialect.Time(now), tx.Dialect.Time(aged),
					s.cfg.FairnessWindow, kinds, agents, projects, skip)
				if errors.Is(err, sqldb.ErrNotFound) {
					break
				}
				if err != nil {
					return fmt.Errorf("find claimable run: %w", err)
				}
				out, err = s.lease(ctx, tx, c, req, runID, leaseSeconds, now)
				if sqldb.IsConflict(err, s.leasedSubjectMarkers()...) {
					skip = runID
					continue
				}
				return err
			}
		}
		return ErrNothingToClaim
	})
	return out, err
}

func (s *Service) lease(ctx context.Context, tx *sqldb.Tx, c Caller, req ClaimRequest, runID uuid.UUID, leaseSeconds int, now time.Time) (Claimed, error) {
	until := now.Add(time.Duration(leaseSeconds) * time.Second)
	res, err := tx.ExecContext(ctx, s.q.lease, c.TenantID, runID, req.HolderID, leaseSeconds, tx.Dialect.Time(until))
	if err != nil {
		return Claimed{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Claimed{}, fmt.Errorf("lease run %s: it was no longer queued", runID)
	}
	run, err := s.getBy(ctx, tx, s.q.get, c.TenantID, runID)
	if err != nil {
		return Claimed{}, err
	}
	if _, err := tx.ExecContext(ctx, s.q.projectLeased, c.TenantID, run.ProjectID, 1); err != nil {
		return Claimed{}, fmt.Errorf("count project lease: %w", err)
	}
	a := attempts.Attempt{
		AttemptID: ids.New(), RunID: run.RunID, StepID: run.StepID, TenantID: c.TenantID, ProjectID: run.ProjectID,
		EnvironmentID: run.EnvironmentID, LeaseID: ids.New(), FencingToken: run.Epoch, SnapshotID: run.SnapshotID,
		ReleaseID: req.ReleaseID, AdapterVersion: req.AdapterVersion, AgentID: run.AgentID,
		ModelProfileID: req.ModelProfileID, State: attempts.Running, Phase: attempts.Starting,
		MaxCorrections: run.MaxCorrections, StartedAt: now,
	}
	if err := attempts.Insert(ctx, tx, &a); err != nil {
		return Claimed{}, err
	}
	// The insert of the attempt changed nothing of the run read above.
	if err := s.notifyRun(ctx, tx, run); err != nil {
		return Claimed{}, err
	}
	stored, err := attempts.Get(ctx, tx, c.TenantID, a.AttemptID)
	if err != nil {
		return Claimed{}, err
	}
	return Claimed{Run: run, Attempt: stored, Lease: Lease{LeaseID: a.LeaseID, FencingToken: run.Epoch, LeasedUntil: until}}, nil
}

func jsonList(xs []string) any {
	if len(xs) == 0 {
		return nil
	}
	b, _ := json.Marshal(xs)
	return string(b)
}

// Disagreements counts attempts and runs that disagree, across tenants: a running attempt
// whose run is not leased at its token, a leased run without exactly one running attempt
// at its epoch, or a run out of its lease with a running attempt. It is 0 at every commit.
func (s *Service) Disagreements(ctx context.Context) (int, error) {
	total := 0
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		for _, q := range agreementQueries {
			var n int
			if err := tx.GetContext(ctx, &n, q); err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	return total, err
}
