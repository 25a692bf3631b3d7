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

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/waits"
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
	waits  *waits.Hub // reads waiting for a change (RunKey, AttemptKey)
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
	return &Service{db: db, q: queriesFor(db.Dialect), cfg: cfg, log: log, wake: newNotifier(), waits: waits.NewHub(), jitter: rand.Float64}
}

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// Spec is what an enqueue asks for. Times are optional; zero values take defaults.
type Spec struct {
	ProjectID      string     `json:"projectId"`
	EnvironmentID  *string    `json:"environmentId"`
	Subject        string     `json:"subject"`
	Kind           string     `json:"kind"`
	AgentID        string     `json:"agentId"`
	StepID         uuid.UUID  `json:"stepId"`
	SnapshotID     uuid.UUID  `json:"snapshotId"`
	Input          JSONText   `json:"input"`
	Band           api.Band   `json:"band"`
	MaxAttempts    int        `json:"maxAttempts"`
	MaxCorrections int        `json:"maxCorrections"`
	DueAt          *time.Time `json:"dueAt"`
	DeadlineAt     *time.Time `json:"deadlineAt"`
	IdempotencyKey *string    `json:"idempotencyKey"`
	ParentRunID    *uuid.UUID `json:"parentRunId"`
	// Tags (at most 16 identifiers) and Metadata (compact JSON, at most 4 KiB) are kept
	// with the run and copied to its continuation.
	Tags     []string `json:"tags,omitempty"`
	Metadata JSONText `json:"metadata,omitempty"`
	// RunExtras are kept with the run as given and copied to its continuation (TraceParent,
	// the caller's W3C traceparent, is exported with the run's spans).
	api.RunExtras
}

// The json names of Spec are the names its fields have in the request hash (queue.go).

// check refuses what the validator of the API cannot see: metadata past its bound.
func (spec Spec) check() error {
	if len(spec.Metadata) > api.MaxMetadataBytes {
		return apperr.FieldsInvalid(api.FieldError{Field: "metadata",
			Reason: fmt.Sprintf("must be at most %d bytes of compact JSON", api.MaxMetadataBytes)})
	}
	if len(spec.Tags) > maxTags {
		return apperr.FieldsInvalid(api.FieldError{Field: "tags", Reason: fmt.Sprintf("must have at most %d items", maxTags)})
	}
	if spec.TraceParent != nil && !ValidTraceParent(*spec.TraceParent) {
		return apperr.FieldsInvalid(api.FieldError{Field: "traceparent",
			Reason: "must be a W3C traceparent: 00-<32 lowercase hex, not all zero>-<16 lowercase hex, not all zero>-<2 lowercase hex>"})
	}
	return nil
}

// ValidTraceParent reports whether s is a version-00 W3C traceparent whose trace and parent
// ids are not all zeros (W3C Trace Context, section 3.2).
func ValidTraceParent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	hex := func(p string) bool {
		zero := true
		for _, c := range p {
			switch {
			case c == '0':
			case c >= '1' && c <= '9', c >= 'a' && c <= 'f':
				zero = false
			default:
				return false
			}
		}
		return !zero
	}
	flags := s[53:]
	return hex(s[3:35]) && hex(s[36:52]) && (hex(flags) || flags == "00")
}

const maxTags = 16

// tagsJSON is the stored form of tags: a JSON array, or empty (NULL) for none.
func tagsJSON(tags []string) JSONText {
	if len(tags) == 0 {
		return nil
	}
	b, _ := json.Marshal(tags)
	return b
}

// Caller is who asks: the tenant and the key (recorded as CreatedBy).
type Caller struct {
	TenantID string
	KeyID    string
}

// Enqueue queues a run. It reports created=false when the idempotency key already named a
// run for the same request, which it returns. Errors: Invalid (deadlineAt not after dueAt
// or not in the future; parent run not found), UnknownProject, LoopDepth,
// IdempotencyKeyReused (the key names a run made by another request).
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
//
// The insert comes first: an idempotency key is compared only when the unique index
// refuses the insert (the stored run answers an exact repeat, another request is
// IdempotencyKeyReused), and a purged key (its tombstone) makes the insert write nothing
// and answers the tombstone. Statements on SQLite: the insert, the head marker, the
// read-back (plus the parent's read for a child run).
func (s *Service) EnqueueTx(ctx context.Context, tx *sqldb.Tx, c Caller, spec Spec) (Run, bool, error) {
	now, err := tx.Now(ctx)
	if err != nil {
		return Run{}, false, err
	}
	// The request hash is compared only under an idempotency key (sameRequest): a run
	// without one is never looked up by it and keeps none (computing it cost an enqueue
	// about 33 thousand instructions: docs/perf/issue-35.md).
	var hash *string
	if spec.IdempotencyKey != nil {
		h := spec.requestHash()
		hash = &h
	}
	if err := spec.check(); err != nil {
		return Run{}, false, err
	}
	if err := checkDeadline(spec, now); err != nil {
		// A repeat of a request accepted before its deadline came close still answers as the
		// first did.
		if spec.IdempotencyKey != nil {
			if r, rerr := s.getBy(ctx, tx, s.q.byIdempotency, c.TenantID, *spec.IdempotencyKey); rerr == nil && sameRequest(r, *hash) {
				return r, false, nil
			}
		}
		return Run{}, false, err
	}
	depth := 0
	var parent uuid.NullUUID
	if spec.ParentRunID != nil {
		p, err := s.getBy(ctx, tx, s.q.get, c.TenantID, *spec.ParentRunID)
		if apperr.Is(err, api.CodeNotFound) {
			return Run{}, false, apperr.FieldsInvalid(api.FieldError{Field: "parentRunId", Reason: "names no run"})
		}
		if err != nil {
			return Run{}, false, err
		}
		depth = p.Depth + 1
		if depth > s.cfg.MaxDepth {
			return Run{}, false, apperr.New(api.CodeLoopDepth, "a run at depth %d may not enqueue another: the limit is %d", p.Depth, s.cfg.MaxDepth)
		}
		parent = uuid.NullUUID{UUID: *spec.ParentRunID, Valid: true}
	}
	due := now
	if spec.DueAt != nil {
		due = sqldb.Truncate(*spec.DueAt)
	}
	if err := s.lockSubject(ctx, tx, c.TenantID, spec.Subject); err != nil {
		return Run{}, false, err
	}
	r, err := s.insertRun(ctx, tx, Run{
		RunID: tx.Dialect.NewID(), TenantID: c.TenantID, ProjectID: spec.ProjectID, EnvironmentID: spec.EnvironmentID,
		Subject: spec.Subject, Kind: spec.Kind, AgentID: spec.AgentID, StepID: spec.StepID, SnapshotID: spec.SnapshotID,
		Input: spec.Input, Band: spec.Band, MaxAttempts: spec.MaxAttempts, MaxCorrections: spec.MaxCorrections,
		QueuedAt: now, DueAt: due, DeadlineAt: spec.DeadlineAt, IdempotencyKey: spec.IdempotencyKey, ParentRunID: parent,
		Depth: depth, CreatedBy: c.KeyID, Tags: tagsJSON(spec.Tags), Metadata: spec.Metadata, RunExtras: spec.RunExtras,
	}, hash)
	switch {
	case spec.IdempotencyKey != nil && sqldb.IsConflict(err, s.idempotencyMarkers()...):
		// The key names a run already (on SQL Server possibly one a concurrent enqueue just
		// committed; the insert waited for it). The caller's transaction is still usable on
		// both dialects after a unique violation.
		r, err := s.getBy(ctx, tx, s.q.byIdempotency, c.TenantID, *spec.IdempotencyKey)
		if err != nil {
			return Run{}, false, err
		}
		if !sameRequest(r, *hash) {
			return Run{}, false, apperr.New(api.CodeIdempotencyKeyReused,
				"idempotencyKey %q already names a run made by a different request", *spec.IdempotencyKey)
		}
		return r, false, nil
	case errors.Is(err, sqldb.ErrBadReference):
		// The parent was read above, so the foreign key that refused is the project's.
		return Run{}, false, apperr.New(api.CodeUnknownProject, "project %q does not exist", spec.ProjectID)
	case errors.Is(err, sqldb.ErrNotFound) && spec.IdempotencyKey != nil:
		// No row written: the key's run was purged, and its tombstone answers.
		return s.tombstoned(ctx, tx, c.TenantID, *spec.IdempotencyKey)
	case err != nil:
		return Run{}, false, fmt.Errorf("insert run: %w", err)
	}
	if r, err = s.markHead(ctx, tx, r); err != nil {
		return Run{}, false, err
	}
	return r, true, s.notifyRun(ctx, tx, r)
}

// insertRun inserts r, a queued run as its caller built it, and answers it as stored. The
// statement answers only what the database decides, the Version and whether r became its
// subject's head; the rest is r with its times truncated as Dialect.Time stores them
// (reading the whole row back cost about 130 thousand instructions: docs/perf/issue-22.md).
// hash is the request hash an idempotency key is compared by (nil: none). Only text the
// insert stores without comparing goes as Dialect.Text: the tenant, subject and idempotency
// key are sought (go-mssqldb declares them by their length).
func (s *Service) insertRun(ctx context.Context, tx *sqldb.Tx, r Run, hash *string) (Run, error) {
	var got struct {
		Version     sqldb.RowVersion `db:"Version"`
		SubjectHead bool             `db:"SubjectHead"`
	}
	insert := s.q.insert
	if r.IdempotencyKey == nil && s.q.insertKeyless != "" {
		insert = s.q.insertKeyless
	}
	if err := tx.GetContext(ctx, &got, insert, insertArgs(tx.Dialect, r, hash)...); err != nil {
		return Run{}, err
	}
	r.State, r.QueuedAt, r.DueAt = api.RunQueued, sqldb.Truncate(r.QueuedAt), sqldb.Truncate(r.DueAt)
	if r.DeadlineAt != nil {
		t := sqldb.Truncate(*r.DeadlineAt)
		r.DeadlineAt = &t
	}
	r.Version, r.SubjectHead = got.Version, got.SubjectHead
	return r, nil
}

// markHead completes the insert of r: a run that is the only one of its subject was
// marked its head by the insert itself; otherwise the subject's head is computed again
// (syncHead), and r read again, as the marker may have moved onto it.
func (s *Service) markHead(ctx context.Context, tx *sqldb.Tx, r Run) (Run, error) {
	if r.SubjectHead {
		return r, nil
	}
	if _, err := s.syncHead(ctx, tx, r.TenantID, r.Subject); err != nil {
		return Run{}, err
	}
	return s.getBy(ctx, tx, s.q.get, r.TenantID, r.RunID)
}

// checkDeadline refuses a deadline that is not after the due time (now when none is
// given) or not in the future (by the transaction's clock: the database's in production).
func checkDeadline(spec Spec, now time.Time) error {
	if spec.DeadlineAt == nil {
		return nil
	}
	deadline := sqldb.Truncate(*spec.DeadlineAt)
	switch {
	case !deadline.After(now):
		return apperr.FieldsInvalid(api.FieldError{Field: "deadlineAt", Reason: "must be in the future"})
	case spec.DueAt != nil && !deadline.After(sqldb.Truncate(*spec.DueAt)):
		return apperr.FieldsInvalid(api.FieldError{Field: "deadlineAt", Reason: "must be after dueAt"})
	}
	return nil
}

// sameRequest reports whether r was enqueued by a request with this hash. Runs enqueued
// before request hashes were kept (migration 000011) have none and match any request, as
// every repeat did then.
func sameRequest(r Run, hash string) bool {
	return r.RequestHash == nil || *r.RequestHash == hash
}

// tombstoned answers an enqueue whose idempotency key belonged to a run that retention
// purged: the stand-in for that run, never a second run.
func (s *Service) tombstoned(ctx context.Context, tx *sqldb.Tx, tenantID, key string) (Run, bool, error) {
	var tomb struct {
		RunID    uuid.UUID `db:"RunId"`
		PurgedAt time.Time `db:"PurgedAt"`
	}
	if err := tx.GetContext(ctx, &tomb, s.q.tombstone, tenantID, key); err != nil {
		return Run{}, false, fmt.Errorf("read tombstone: %w", err)
	}
	return Run{RunID: tomb.RunID, TenantID: tenantID, State: api.RunEnded, IdempotencyKey: &key, EndedAt: &tomb.PurgedAt,
		Purged: true}, false, nil
}

// Woke tells claimers on this replica that tenant has new work (after a commit).
func (s *Service) Woke(tenantID string) { s.wake.notify(tenantID) }

func (s *Service) idempotencyMarkers() []string {
	return []string{"UX_Runs_Idempotency", "Runs.TenantId, Runs.IdempotencyKey"}
}

func (s *Service) leasedSubjectMarkers() []string {
	return []string{"UX_Runs_LeasedSubject", "Runs.TenantId, Runs.Subject"}
}

func (s *Service) continuedFromMarkers() []string {
	return []string{"UX_Runs_ContinuedFrom", "Runs.ContinuedFromRunId"}
}

func (s *Service) getBy(ctx context.Context, tx *sqldb.Tx, query string, args ...any) (Run, error) {
	var r Run
	err := tx.GetContext(ctx, &r, query, args...)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Run{}, apperr.New(api.CodeNotFound, "no such run")
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run: %w", err)
	}
	return r, nil
}

// Get reads a run of the tenant (NotFound when missing or another tenant's).
func (s *Service) Get(ctx context.Context, tenantID string, id uuid.UUID) (Run, error) {
	return s.readBy(ctx, s.q.get, tenantID, id)
}

// WaitEnded reads a run of tenantID, waiting up to d for it to end: it answers as soon as
// the run has ended (a write of this process wakes it; another replica's is seen on the
// poll interval), or at d, or when the service stops waiting (StopWaits), with the run as
// it then is.
func (s *Service) WaitEnded(ctx context.Context, tenantID string, id uuid.UUID, d time.Duration) (Run, error) {
	return waits.Until(ctx, s.waits, RunKey(tenantID, id), d, s.cfg.PollInterval,
		func(ctx context.Context) (Run, bool, time.Time, error) {
			r, err := s.Get(ctx, tenantID, id)
			return r, r.State == api.RunEnded, time.Time{}, err
		})
}

// Waits is the hub that a run's end (RunKey) and an attempt's end (AttemptKey) notify after
// commit; the other parts wait on it and notify it of their own changes under these keys.
func (s *Service) Waits() *waits.Hub { return s.waits }

// StopWaits answers every wait on Waits, and every claim waiting for work, now, and every
// later one at once (shutdown).
func (s *Service) StopWaits() { s.waits.Close() }

// RunKey is the wait key a run's end notifies.
func RunKey(tenantID string, runID uuid.UUID) waits.Key {
	return waits.Key{Tenant: tenantID, ID: "run:" + runID.String()}
}

// AttemptKey is the wait key an attempt's end notifies (its decisions close with it), and
// that a change to one of its decisions notifies.
func AttemptKey(tenantID string, attemptID uuid.UUID) waits.Key {
	return waits.Key{Tenant: tenantID, ID: "attempt:" + attemptID.String()}
}

// readBy reads one run of tenantID with query (1 tenant, 2 run) in a read transaction of
// its own.
func (s *Service) readBy(ctx context.Context, query, tenantID string, id uuid.UUID) (Run, error) {
	var r Run
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		r, err = s.getBy(ctx, tx, query, tenantID, id)
		return err
	})
	return r, err
}

// ListFilter narrows a run listing.
type ListFilter struct {
	State     *api.RunState
	Subject   *string
	ProjectID *string
	Kind      *string
	AgentID   *string
	Band      *api.Band
	// QueuedFrom keeps runs queued at or after it. An upper bound is a keyset position:
	// AfterQueuedAt with AfterRunID uuid.Nil keeps runs queued before it.
	QueuedFrom *time.Time
	// After is the keyset position: runs queued before it (newest first).
	AfterQueuedAt *time.Time
	AfterRunID    uuid.UUID
	Limit         int
	// Outcome, ErrorCode, ReleaseID (its latest attempt's release, as insights group runs), EndedFrom
	// (inclusive), EndedTo (exclusive) and Tag narrow to what an insight counts.
	Outcome   *api.RunOutcome
	ErrorCode *string
	ReleaseID *string
	EndedFrom *time.Time
	EndedTo   *time.Time
	Tag       *string
	// AttemptsMin and AttemptsMax keep runs with at least and at most that many attempts
	// (the attempts-per-run insight's bins; at least one: claimed, as claim latency counts).
	AttemptsMin, AttemptsMax *int
	// FirstReleaseID keeps runs whose first attempt ran this release (claim latency's
	// grouping by release).
	FirstReleaseID *string
	// HasError true keeps the runs with an error code, false those without (the runs the
	// errorCode insight groups as "(none)").
	HasError *bool
	// HasRelease true keeps the runs with an attempt (every claim names a release), false the
	// runs never claimed (the runs the release insight groups as "(none)").
	HasRelease *bool
	// The Not lists leave out the runs with one of their values (a run without the value
	// is kept: "(none)" is a group of its own); an insight's "other" group is every group
	// past the ones it names.
	NotProjectIDs, NotAgentIDs, NotKinds, NotReleaseIDs, NotErrorCodes, NotFirstReleaseIDs []string
}

// List lists the tenant's runs, newest first.
func (s *Service) List(ctx context.Context, tenantID string, f ListFilter) ([]Run, error) {
	var rs []Run
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var state any
		if f.State != nil {
			state = int(*f.State)
		}
		var afterRun, band any
		if f.AfterQueuedAt != nil {
			afterRun = f.AfterRunID
		}
		if f.Band != nil {
			band = int(*f.Band)
		}
		var outcome any
		if f.Outcome != nil {
			outcome = string(*f.Outcome)
		}
		return tx.SelectContext(ctx, &rs, s.q.list, tenantID, state, f.Subject, f.ProjectID, f.Kind,
			tx.Dialect.NullTime(f.AfterQueuedAt), afterRun, f.Limit, f.AgentID, tx.Dialect.NullTime(f.QueuedFrom), band,
			outcome, f.ErrorCode, f.ReleaseID, tx.Dialect.NullTime(f.EndedFrom), tx.Dialect.NullTime(f.EndedTo), f.Tag,
			f.AttemptsMin, f.AttemptsMax, f.FirstReleaseID, sqldb.OptionalBit(f.HasError),
			sqldb.OptionalBit(f.HasRelease), sqldb.JSONList(tx.Dialect, f.NotProjectIDs), sqldb.JSONList(tx.Dialect, f.NotAgentIDs),
			sqldb.JSONList(tx.Dialect, f.NotKinds), sqldb.JSONList(tx.Dialect, f.NotReleaseIDs),
			sqldb.JSONList(tx.Dialect, f.NotErrorCodes), sqldb.JSONList(tx.Dialect, f.NotFirstReleaseIDs))
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return rs, nil
}

// errStateMoved: a run changed state between the read that chose how to lock it and the
// lock (SQL Server only: SQLite has one writer); the transaction runs again.
var errStateMoved = fmt.Errorf("the run changed state while it was being locked: %w", sqldb.ErrRetryable)

// Cancel cancels a run: a queued run ends cancelled at once, a leased one gets a cancel
// request its holder sees on its next heartbeat, an ended one is left as it is. It is
// idempotent and returns the run.
//
// Ending a queued run changes its subject's queue, so it takes the subject lock before
// the run's (lock order); asking a leased run's holder to stop changes no queue and takes
// only the run's. Which one applies is read first, without a lock.
func (s *Service) Cancel(ctx context.Context, tenantID string, runID uuid.UUID) (Run, error) {
	var out Run
	moved := false // the subject's head moved: its next queued run is claimable now
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		out, _, moved, err = s.CancelTx(ctx, tx, tenantID, runID)
		return err
	})
	if err != nil {
		return Run{}, fmt.Errorf("cancel run: %w", err)
	}
	if moved {
		// The subject's next queued run is its head now.
		s.wake.notify(tenantID)
	}
	return out, nil
}

// CancelEffect is what a cancel did to a run.
type CancelEffect int

// The cancel effects.
const (
	CancelNone      CancelEffect = iota // ended already, or a cancel was pending
	CancelEnded                         // a queued run ended cancelled
	CancelRequested                     // a leased run's holder was asked to stop
)

// CancelTx is Cancel inside the caller's transaction (a bulk operation's batch), saying
// what it did. wake reports that the subject's next queued run became its head: after the
// commit, the caller calls Wake for the tenant.
func (s *Service) CancelTx(ctx context.Context, tx *sqldb.Tx, tenantID string, runID uuid.UUID) (out Run, did CancelEffect, wake bool, err error) {
	seen, err := s.getBy(ctx, tx, s.q.get, tenantID, runID)
	if err != nil || seen.State == api.RunEnded {
		return seen, CancelNone, false, err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Run{}, CancelNone, false, err
	}
	if seen.State == api.RunQueued {
		if err := s.lockSubject(ctx, tx, tenantID, seen.Subject); err != nil {
			return Run{}, CancelNone, false, err
		}
	}
	run, err := s.getBy(ctx, tx, s.q.lock, tenantID, runID)
	if err != nil {
		return Run{}, CancelNone, false, err
	}
	switch {
	case run.State == api.RunEnded:
		return run, CancelNone, false, nil
	case run.State != seen.State:
		return Run{}, CancelNone, false, errStateMoved
	case run.State == api.RunQueued:
		out, wake, err = s.endQueued(ctx, tx, run, api.OutcomeCancelled, now)
		return out, CancelEnded, wake, err
	case run.CancelRequestedAt == nil:
		out, err = s.getBy(ctx, tx, s.q.requestCancel, runID, tx.Dialect.Time(now))
		return out, CancelRequested, false, err
	default:
		return run, CancelNone, false, nil
	}
}

// Wake tells the tenant's waiting claims that work may be claimable (after a commit that
// CancelTx or ContinueTx said moved a queue).
func (s *Service) Wake(tenantID string) { s.wake.notify(tenantID) }

// RequestCancelTx asks the holder of a leased run to stop, inside the caller's transaction
// (a release draining under the cancel policy). A run that is not leased, or already has
// a cancel pending, is left as it is. It changes no queue, so it takes no subject lock.
func (s *Service) RequestCancelTx(ctx context.Context, tx *sqldb.Tx, tenantID string, runID uuid.UUID) error {
	run, err := s.getBy(ctx, tx, s.q.lock, tenantID, runID)
	if err != nil {
		return err
	}
	if run.State != api.RunLeased || run.CancelRequestedAt != nil {
		return nil
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	_, err = s.getBy(ctx, tx, s.q.requestCancel, runID, tx.Dialect.Time(now))
	return err
}

// Continuation is what a continueAfter may change of the ended run's spec.
type Continuation struct {
	DueAt      *time.Time
	SnapshotID *uuid.UUID
}

// Continue queues the continuation of an ended run: the same spec on a new run that starts
// at the old run's epoch (so its first token is greater than any before) and spends one
// more attempt. A repeat returns the existing continuation with created=false: the insert
// comes first, and the unique index on ContinuedFromRunId answers a repeat (or a
// concurrent continue that won). Errors: IllegalTransition (the run has not ended),
// AttemptsExhausted.
func (s *Service) Continue(ctx context.Context, c Caller, runID uuid.UUID, cont Continuation) (Run, bool, error) {
	var (
		out     Run
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		var err error
		out, created, err = s.ContinueTx(ctx, tx, c, runID, cont)
		return err
	})
	if err != nil {
		return Run{}, false, fmt.Errorf("continue run: %w", err)
	}
	if created {
		s.wake.notify(c.TenantID)
	}
	return out, created, nil
}

// ContinueTx is Continue inside the caller's transaction (a bulk operation's batch); when
// created, the caller calls Wake for the tenant after the commit. Its errors
// (IllegalTransition, AttemptsExhausted) come before it writes anything.
func (s *Service) ContinueTx(ctx context.Context, tx *sqldb.Tx, c Caller, runID uuid.UUID, cont Continuation) (Run, bool, error) {
	old, err := s.getBy(ctx, tx, s.q.lock, c.TenantID, runID)
	if err != nil {
		return Run{}, false, err
	}
	if old.State != api.RunEnded {
		return Run{}, false, apperr.New(api.CodeIllegalTransition, "only an ended run can be continued; this one is %s", old.State)
	}
	spent := old.Attempt + 1
	if old.NoAttemptLeft() {
		return Run{}, false, apperr.New(api.CodeAttemptsExhausted, "the run has spent %d of %d attempts", old.Attempt, old.MaxAttempts)
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Run{}, false, err
	}
	due := now
	if cont.DueAt != nil {
		due = sqldb.Truncate(*cont.DueAt)
	}
	snapshot := old.SnapshotID
	if cont.SnapshotID != nil {
		snapshot = *cont.SnapshotID
	}
	if err := s.lockSubject(ctx, tx, c.TenantID, old.Subject); err != nil {
		return Run{}, false, err
	}
	r, err := s.insertRun(ctx, tx, Run{
		RunID: tx.Dialect.NewID(), TenantID: c.TenantID, ProjectID: old.ProjectID, EnvironmentID: old.EnvironmentID,
		Subject: old.Subject, Kind: old.Kind, AgentID: old.AgentID, StepID: old.StepID, SnapshotID: snapshot,
		Input: old.Input, Band: old.Band, Epoch: old.Epoch, Attempt: spent, MaxAttempts: old.MaxAttempts,
		MaxCorrections: old.MaxCorrections, QueuedAt: now, DueAt: due, DeadlineAt: old.DeadlineAt,
		ParentRunID: old.ParentRunID, Depth: old.Depth, CreatedBy: c.KeyID, Tags: old.Tags, Metadata: old.Metadata,
		ContinuedFromRunID: uuid.NullUUID{UUID: old.RunID, Valid: true}, RunExtras: old.RunExtras,
	}, nil)
	if sqldb.IsConflict(err, s.continuedFromMarkers()...) {
		// Continued already (by an earlier request, or a concurrent one that committed
		// first): answer with its run.
		out, err := s.getBy(ctx, tx, s.q.continuation, c.TenantID, runID)
		return out, false, err
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("insert continuation: %w", err)
	}
	out, err := s.markHead(ctx, tx, r)
	if err != nil {
		return Run{}, false, err
	}
	return out, true, s.notifyRun(ctx, tx, out)
}

// Disagreements counts what breaks the run-lease core's invariants, across tenants: a
// running attempt whose run is not leased at its token, a leased run without exactly one
// running attempt at its epoch, a run out of its lease with a running attempt, a head
// marker that is not its definition (the oldest queued run of a subject without a leased
// run), and a leased count (tenant or project) that is not the count of leased runs. It
// is 0 at every commit.
func (s *Service) Disagreements(ctx context.Context) (int, error) {
	return s.disagreements(ctx, nil)
}

// TenantDisagreements is Disagreements for one tenant's rows (tests that share a database
// with others, some of which break the invariants on purpose).
func (s *Service) TenantDisagreements(ctx context.Context, tenantID string) (int, error) {
	return s.disagreements(ctx, tenantID)
}

func (s *Service) disagreements(ctx context.Context, tenant any) (int, error) {
	total := 0
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		for _, q := range agreementQueries {
			var n int
			if err := tx.GetContext(ctx, &n, tx.Rebind(q), tenant, tenant); err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	return total, err
}
