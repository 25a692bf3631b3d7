// Package operations runs the admins' bulk actions on runs (DESIGN.md 5b "Admins act, not
// only look"): POST /v1/runs/bulk fixes the runs it matches when it is created, and any
// replica's Runner works through them in bounded batches, each batch one transaction that
// also advances the operation's cursor, under a lease taken with a conditional write (no
// leader). A replica that dies mid-way leaves its lease to pass; another takes the
// operation at its cursor, so no run is acted on twice.
package operations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// insertChunk is how many run ids one insertRuns statement carries; matchPage is how many
// runs one read of the runs list returns while matching a filter.
const (
	insertChunk = 1000
	matchPage   = 1000
)

// Operation is a stored bulk operation.
type Operation struct {
	TenantID         string         `db:"TenantId"`
	OperationID      uuid.UUID      `db:"OperationId"`
	RequestKey       string         `db:"RequestKey"`
	BodyDigest       string         `db:"BodyDigest"`
	Action           api.BulkAction `db:"Action"`
	Reason           *string        `db:"Reason"`
	State            string         `db:"State"`
	Matched          int64          `db:"Matched"`
	Cursor           int64          `db:"Cursor"`
	Cancelled        int64          `db:"Cancelled"`
	CancelRequested  int64          `db:"CancelRequested"`
	Continued        int64          `db:"Continued"`
	SkippedEnded     int64          `db:"SkippedEnded"`
	SkippedNotEnded  int64          `db:"SkippedNotEnded"`
	SkippedExhausted int64          `db:"SkippedExhausted"`
	SkippedNotFound  int64          `db:"SkippedNotFound"`
	SkippedContinued int64          `db:"SkippedContinued"`
	Holder           *string        `db:"Holder"`
	LeaseUntil       *time.Time     `db:"LeaseUntil"`
	CreatedAt        time.Time      `db:"CreatedAt"`
	CreatedBy        string         `db:"CreatedBy"`
	FinishedAt       *time.Time     `db:"FinishedAt"`
}

// Wire is the operation as the API shows it.
func (o Operation) Wire() api.Operation {
	id := o.OperationID
	created := api.NewTime(o.CreatedAt)
	out := api.Operation{OperationID: &id, Action: o.Action, State: api.OperationState(o.State), Reason: o.Reason,
		Matched: o.Matched, Cancelled: o.Cancelled, CancelRequested: o.CancelRequested, Continued: o.Continued,
		Skips: api.OperationSkips{Ended: o.SkippedEnded, NotEnded: o.SkippedNotEnded, AttemptsExhausted: o.SkippedExhausted,
			NotFound: o.SkippedNotFound, ContinuedBefore: o.SkippedContinued},
		CreatedAt: &created}
	out.Done = o.Cancelled + o.CancelRequested + o.Continued
	out.Skipped = o.SkippedEnded + o.SkippedNotEnded + o.SkippedExhausted + o.SkippedNotFound + o.SkippedContinued
	if o.FinishedAt != nil {
		f := api.NewTime(*o.FinishedAt)
		out.FinishedAt = &f
	}
	return out
}

// Store creates and reads operations.
type Store struct {
	db   *sqldb.DB
	q    *queries
	runs *runs.Service
	// maxMatched is api.MaxBulkMatched (a test lowers it).
	maxMatched int
}

// NewStore returns the operation store over db.
func NewStore(db *sqldb.DB, rs *runs.Service) *Store {
	return &Store{db: db, q: queriesFor(db.Dialect), runs: rs, maxMatched: api.MaxBulkMatched}
}

// Caller is who asks for an operation.
type Caller = runs.Caller

// Create answers a bulk request: a dry run's count (created false, no operation stored), an
// exact repeat's operation (created false), or a new running operation with the runs it
// matched now. Errors: InvalidRequest (neither or both of runIds and filter),
// IdempotencyKeyReused (the key with another body), BulkTooLarge (more than
// api.MaxBulkMatched runs match).
func (s *Store) Create(ctx context.Context, c Caller, req api.BulkRunsRequest) (api.Operation, bool, error) {
	if (req.RunIDs == nil) == (req.Filter == nil) {
		return api.Operation{}, false, apperr.FieldsInvalid(api.FieldError{Field: "runIds", Reason: "give exactly one of runIds and filter"})
	}
	if f := req.Filter; f != nil {
		if f.EndedFrom != nil && f.EndedTo != nil && f.EndedTo.Before(f.EndedFrom.Time) {
			return api.Operation{}, false, apperr.FieldsInvalid(api.FieldError{Field: "filter.endedTo", Reason: "must not be before endedFrom"})
		}
		if f.QueuedFrom != nil && f.QueuedTo != nil && f.QueuedTo.Before(f.QueuedFrom.Time) {
			return api.Operation{}, false, apperr.FieldsInvalid(api.FieldError{Field: "filter.queuedTo", Reason: "must not be before queuedFrom"})
		}
		if f.ErrorCode != nil && f.HasError != nil && !*f.HasError {
			return api.Operation{}, false, apperr.FieldsInvalid(api.FieldError{Field: "filter.hasError", Reason: "must not be false with errorCode"})
		}
		if f.ReleaseID != nil && f.HasRelease != nil && !*f.HasRelease {
			return api.Operation{}, false, apperr.FieldsInvalid(api.FieldError{Field: "filter.hasRelease", Reason: "must not be false with releaseId"})
		}
	}
	key, digest, err := requestKey(req)
	if err != nil {
		return api.Operation{}, false, err
	}
	keyed := req.IdempotencyKey != nil
	if !req.DryRun {
		if op, found, err := s.byRequest(ctx, c.TenantID, key, keyed, digest); err != nil || found {
			return op, false, err
		}
	}
	ids, err := s.match(ctx, c.TenantID, req)
	if err != nil {
		return api.Operation{}, false, err
	}
	if req.DryRun {
		return api.Operation{Action: req.Action, State: api.OperationDryRun, Reason: req.Reason, Matched: int64(len(ids))}, false, nil
	}
	var (
		out     Operation
		created bool
	)
	err = s.db.Write(ctx, sqldb.TenantScope(c.TenantID), func(tx *sqldb.Tx) error {
		created = false
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		id := tx.Dialect.NewID()
		key := key
		if !keyed {
			key = windowed(key, now)
		}
		_, err = tx.ExecContext(ctx, s.q.insert, c.TenantID, id, key, digest, string(req.Action), tx.Dialect.NullText(req.Reason),
			len(ids), tx.Dialect.Time(now), c.KeyID)
		if sqldb.IsConflict(err, "UX_Operations_Request", "Operations.TenantId, Operations.RequestKey") {
			// A concurrent exact repeat committed first: its operation is the answer.
			return tx.GetContext(ctx, &out, s.q.byRequest, c.TenantID, key)
		}
		if err != nil {
			return fmt.Errorf("insert operation: %w", err)
		}
		for start := 0; start < len(ids); start += insertChunk {
			chunk := ids[start:min(start+insertChunk, len(ids))]
			list, err := json.Marshal(chunk)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q.insertRuns, c.TenantID, id, start, tx.Dialect.JSON(string(list))); err != nil {
				return fmt.Errorf("insert operation runs: %w", err)
			}
		}
		created = true
		return tx.GetContext(ctx, &out, s.q.get, c.TenantID, id)
	})
	if err != nil {
		return api.Operation{}, false, fmt.Errorf("create operation: %w", err)
	}
	if out.BodyDigest != digest {
		return api.Operation{}, false, apperr.New(api.CodeIdempotencyKeyReused, "the idempotency key was used with another body")
	}
	return out.Wire(), created, nil
}

// requestKey names a request for its exact repeats: the idempotency key when there is one,
// else the digest of the body (dryRun aside: a dry run stores nothing), which is windowed
// (repeatWindow) where it is stored and looked up.
func requestKey(req api.BulkRunsRequest) (key, digest string, err error) {
	req.DryRun = false
	body, err := json.Marshal(req)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(body)
	digest = hex.EncodeToString(sum[:])
	if req.IdempotencyKey != nil {
		return "key:" + *req.IdempotencyKey, digest, nil
	}
	return "body:" + digest, digest, nil
}

// repeatWindow is how far apart two requests with the same body and no idempotencyKey are
// still one request: a retry finds the operation the first made, while the same action asked
// for again later (the filter matching runs that came since) is a new operation. An unkeyed
// request's key names the window it came in; a repeat looks in its window and the one
// before, so one within repeatWindow of the first always finds it, one past twice that never.
const repeatWindow = 10 * time.Minute

// windowed is an unkeyed request's key in the window of at.
func windowed(key string, at time.Time) string {
	return key + "@" + strconv.FormatInt(at.Unix()/int64(repeatWindow/time.Second), 10)
}

// byRequest finds the operation an exact repeat names: by its idempotency key (keyed), or by
// its body within repeatWindow.
func (s *Store) byRequest(ctx context.Context, tenantID, key string, keyed bool, digest string) (api.Operation, bool, error) {
	var op Operation
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		if keyed {
			return tx.GetContext(ctx, &op, s.q.byRequest, tenantID, key)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		for _, at := range []time.Time{now, now.Add(-repeatWindow)} {
			if err = tx.GetContext(ctx, &op, s.q.byRequest, tenantID, windowed(key, at)); !errors.Is(err, sqldb.ErrNotFound) {
				return err
			}
		}
		return err
	})
	switch {
	case errors.Is(err, sqldb.ErrNotFound):
		return api.Operation{}, false, nil
	case err != nil:
		return api.Operation{}, false, fmt.Errorf("read operation: %w", err)
	case op.BodyDigest != digest:
		return api.Operation{}, false, apperr.New(api.CodeIdempotencyKeyReused, "the idempotency key was used with another body")
	}
	return op.Wire(), true, nil
}

// match lists the runs the request names, in a fixed order: runIds as given (repeats once),
// or the runs list's filter read page by page on its keyset (newest first), which is
// stable while runs are added, so every matching run is listed once. The matching is
// bounded instead of paged over the operation's life: what the admin was shown (the dry
// run's count) is what is acted on, and a run queued later is not swept in.
func (s *Store) match(ctx context.Context, tenantID string, req api.BulkRunsRequest) ([]uuid.UUID, error) {
	if req.Filter == nil {
		seen := make(map[uuid.UUID]bool, len(req.RunIDs))
		out := make([]uuid.UUID, 0, len(req.RunIDs))
		for _, id := range req.RunIDs {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		return out, nil
	}
	f := req.Filter
	lf := runs.ListFilter{Limit: min(matchPage, s.maxMatched+1), State: f.State, Subject: f.Subject, ProjectID: f.ProjectID, Kind: f.Kind,
		AgentID: f.AgentID, Band: f.Band, Outcome: f.Outcome, ErrorCode: f.ErrorCode, ReleaseID: f.ReleaseID, Tag: f.Tag,
		EndedFrom: timeOf(f.EndedFrom), EndedTo: timeOf(f.EndedTo), QueuedFrom: timeOf(f.QueuedFrom), HasError: f.HasError,
		HasRelease: f.HasRelease, NotProjectIDs: f.NotProjectID, NotAgentIDs: f.NotAgentID, NotKinds: f.NotKind,
		NotReleaseIDs: f.NotReleaseID, NotErrorCodes: f.NotErrorCode}
	if f.QueuedTo != nil {
		lf.AfterQueuedAt, lf.AfterRunID = &f.QueuedTo.Time, uuid.Nil
	}
	var out []uuid.UUID
	for {
		page, err := s.runs.List(ctx, tenantID, lf)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			out = append(out, r.RunID)
		}
		if len(out) > s.maxMatched {
			return nil, apperr.New(api.CodeBulkTooLarge, "more than %d runs match; narrow the filter", s.maxMatched)
		}
		if len(page) < lf.Limit {
			return out, nil
		}
		last := page[len(page)-1]
		lf.AfterQueuedAt, lf.AfterRunID = &last.QueuedAt, last.RunID
	}
}

func timeOf(t *api.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

// Get reads an operation of the tenant (NotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, id uuid.UUID) (api.Operation, error) {
	var op Operation
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &op, s.q.get, tenantID, id)
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return api.Operation{}, apperr.New(api.CodeNotFound, "no such operation")
	}
	if err != nil {
		return api.Operation{}, fmt.Errorf("read operation: %w", err)
	}
	return op.Wire(), nil
}
