// Package decisions keeps DecisionRequests (DESIGN.md section 5): a holder asks a person
// for a decision under its lease, an admin answers it from the inbox, and the holder reads
// the answer back. A pending decision closes exactly once: answered (approved or rejected),
// cancelled (its attempt ended first) or expired (its ExpiresAt passed first).
package decisions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Kind is what a decision asks for (stored as its position; the wire type).
type Kind = api.DecisionKind

// Decision kinds (DESIGN.md section 7a).
const (
	Approval = api.DecisionApproval
	Choice   = api.DecisionChoice
	Input    = api.DecisionInput
)

// Decision statuses: the column holds the wire string.
const (
	StatusPending   = string(api.DecisionPending)
	StatusApproved  = string(api.DecisionApproved)
	StatusRejected  = string(api.DecisionRejected)
	StatusExpired   = string(api.DecisionExpired)
	StatusCancelled = string(api.DecisionCancelled)
)

// Decision is one decision request and, once closed, how it closed.
type Decision struct {
	DecisionID     uuid.UUID       `db:"DecisionId"`
	AttemptID      uuid.UUID       `db:"AttemptId"`
	TenantID       string          `db:"TenantId"`
	Kind           Kind            `db:"Kind"`
	ApprovalID     uuid.NullUUID   `db:"ApprovalId"`
	ProposalHash   *string         `db:"ProposalHash"`
	Options        json.RawMessage `db:"-"`
	Recommendation *string         `db:"Recommendation"`
	// Status is the effective status: a pending decision whose ExpiresAt has passed reads
	// as expired before the background job marks it so.
	Status      string           `db:"Status"`
	RequestedAt time.Time        `db:"RequestedAt"`
	AnsweredAt  *time.Time       `db:"AnsweredAt"`
	Answer      json.RawMessage  `db:"-"`
	AnsweredBy  *string          `db:"AnsweredBy"`
	ExpiresAt   *time.Time       `db:"ExpiresAt"`
	Version     sqldb.RowVersion `db:"Version"`
}

// Wire returns the decision as the API sends it.
func (d Decision) Wire() api.Decision {
	w := api.Decision{DecisionID: d.DecisionID, AttemptID: d.AttemptID, Kind: d.Kind, ProposalHash: d.ProposalHash,
		Options: d.Options, Recommendation: d.Recommendation, Status: api.DecisionStatus(d.Status),
		RequestedAt: api.NewTime(d.RequestedAt), AnsweredAt: api.TimeOf(d.AnsweredAt), Answer: d.Answer,
		AnsweredBy: d.AnsweredBy, ExpiresAt: api.TimeOf(d.ExpiresAt)}
	if d.ApprovalID.Valid {
		id := d.ApprovalID.UUID
		w.ApprovalID = &id
	}
	return w
}

// row is a stored decision: the JSON columns scan as text.
type row struct {
	Decision
	OptionsJSON runs.JSONText `db:"OptionsJson"`
	AnswerJSON  runs.JSONText `db:"AnswerJson"`
}

// decision returns the row as its caller sees it at now.
func (r row) decision(now time.Time) Decision {
	d := r.Decision
	if len(r.OptionsJSON) > 0 {
		d.Options = json.RawMessage(r.OptionsJSON)
	}
	if len(r.AnswerJSON) > 0 {
		d.Answer = json.RawMessage(r.AnswerJSON)
	}
	if expiredAt(d.Status, d.ExpiresAt, now) {
		d.Status = StatusExpired
	}
	return d
}

// expiredAt reports whether a decision stored with status is expired at now: pending, with
// an ExpiresAt that is not after now. ExpirePending marks exactly these.
func expiredAt(status string, expiresAt *time.Time, now time.Time) bool {
	return status == StatusPending && expiresAt != nil && !expiresAt.After(now)
}

// Request is what a holder asks.
type Request struct {
	Kind           Kind
	ProposalHash   *string
	Options        json.RawMessage // nil: none
	Recommendation *string
	// ExpiresIn, when positive, closes the decision as expired that long after it is asked.
	ExpiresIn time.Duration
}

// Answer is an admin's answer.
type Answer struct {
	// Status is StatusApproved or StatusRejected.
	Status     string
	Answer     json.RawMessage // nil: none
	ApprovalID *uuid.UUID
	// KeyID is the answering key (AnsweredBy).
	KeyID string
	// IfMatch is the condition (If-Match) the current version must meet.
	IfMatch sqldb.VersionMatcher
}

// Position is a keyset position in RequestedAt, DecisionId order.
type Position struct {
	RequestedAt time.Time
	DecisionID  uuid.UUID
}

// ListFilter narrows the inbox.
type ListFilter struct {
	// Status, when set, matches the effective status.
	Status *string
	// After continues a listing after this position (nil: from the start).
	After *Position
	Limit int
}

// Store keeps decisions. Holder writes pass the run-lease core's fence.
type Store struct {
	db  *sqldb.DB
	svc *runs.Service
	q   *queries
}

// NewStore returns the decision store of db; svc fences holder writes.
func NewStore(db *sqldb.DB, svc *runs.Service) *Store {
	return &Store{db: db, svc: svc, q: queriesFor(db.Dialect)}
}

// Request records a pending decision under the holder's fence and moves the attempt to
// awaiting_decision. Errors: NotFound (no such attempt for the tenant), StaleLease,
// LeaseExpired; nothing is written when it fails.
func (s *Store) Request(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, r Request) (Decision, error) {
	var out Decision
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		f, err := s.svc.Fence(ctx, tx, tenantID, attemptID, token)
		if err != nil {
			return err
		}
		var expires *time.Time
		if r.ExpiresIn > 0 {
			t := f.Now.Add(r.ExpiresIn)
			expires = &t
		}
		id := ids.New()
		_, err = tx.ExecContext(ctx, s.q.insert, id, attemptID, tenantID, int(r.Kind), r.ProposalHash,
			runs.JSONText(r.Options), r.Recommendation, tx.Dialect.Time(f.Now), tx.Dialect.NullTime(expires))
		if err != nil {
			return fmt.Errorf("insert decision: %w", err)
		}
		if err := attempts.SetPhase(ctx, tx, attemptID, attempts.AwaitingDecision); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, s.q.get, tenantID, id, f.Now)
		return err
	})
	if err != nil {
		return Decision{}, fmt.Errorf("request decision: %w", err)
	}
	return out, nil
}

// Get reads a decision of the tenant (NotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, id uuid.UUID) (Decision, error) {
	var out Decision
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		out, err = s.get(ctx, tx, s.q.get, tenantID, id, now)
		return err
	})
	return out, err
}

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, query, tenantID string, id uuid.UUID, now time.Time) (Decision, error) {
	var r row
	err := tx.GetContext(ctx, &r, query, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Decision{}, apperr.New(apperr.NotFound, "no decision %s", id)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("read decision: %w", err)
	}
	return r.decision(now), nil
}

// Answer closes a pending decision as approved or rejected. A decision changes only when it
// closes, so the checks run in this order: NotFound (missing or another tenant's),
// DecisionClosed (no longer pending, expired by time included, whatever the If-Match says:
// it is the more useful answer for a client that raced another), PreconditionFailed
// (If-Match is not the pending decision's version).
func (s *Store) Answer(ctx context.Context, tenantID string, id uuid.UUID, a Answer) (Decision, error) {
	if a.Status != StatusApproved && a.Status != StatusRejected {
		return Decision{}, apperr.New(apperr.Invalid, "a decision is answered approved or rejected")
	}
	var out Decision
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		cur, err := s.get(ctx, tx, s.q.lock, tenantID, id, now)
		if err != nil {
			return err
		}
		if cur.Status != StatusPending {
			return apperr.New(apperr.DecisionClosed, "the decision is %s, no longer pending", cur.Status)
		}
		if a.IfMatch == nil || !a.IfMatch.Matches(cur.Version) {
			return apperr.New(apperr.PreconditionFailed, "If-Match is not the decision's current ETag")
		}
		var approval any
		if a.ApprovalID != nil {
			approval = *a.ApprovalID
		}
		res, err := tx.ExecContext(ctx, s.q.answer, tenantID, id, a.Status, runs.JSONText(a.Answer), approval,
			a.KeyID, tx.Dialect.Time(now), tx.Dialect.Version(cur.Version))
		if err != nil {
			return fmt.Errorf("answer decision: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			// The row is held since lock: any other count is a bug, not a race.
			return fmt.Errorf("answer decision %s: changed %d rows, want 1 (%v)", id, n, err)
		}
		out, err = s.get(ctx, tx, s.q.get, tenantID, id, now)
		return err
	})
	if err != nil {
		return Decision{}, fmt.Errorf("answer decision: %w", err)
	}
	return out, nil
}

// List is the tenant's inbox, oldest request first (RequestedAt, then DecisionId): the
// decisions waiting longest come first, and decisions asked while an admin pages through
// land on a later page instead of being skipped.
func (s *Store) List(ctx context.Context, tenantID string, f ListFilter) ([]Decision, error) {
	var out []Decision
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var rows []row
		afterAt, afterID := position(tx, f.After)
		if err := tx.SelectContext(ctx, &rows, s.q.list, tenantID, f.Status, tx.Dialect.Time(now), afterAt, afterID, f.Limit); err != nil {
			return err
		}
		out = decisionsOf(rows, now)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list decisions: %w", err)
	}
	return out, nil
}

// ListByAttempt lists an attempt's decisions in RequestedAt, DecisionId order. NotFound when
// the attempt is missing or another tenant's.
func (s *Store) ListByAttempt(ctx context.Context, tenantID string, attemptID uuid.UUID, after *Position, limit int) ([]Decision, error) {
	return attempts.ListOf(ctx, s.db, tenantID, attemptID, "list decisions of attempt", func(tx *sqldb.Tx) ([]Decision, error) {
		return ForAttempt(ctx, tx, tenantID, attemptID, after, limit)
	})
}

// ForAttempt is ListByAttempt inside the caller's transaction (the attempt timeline), without
// the check that the attempt exists.
func ForAttempt(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, after *Position, limit int) ([]Decision, error) {
	now, err := tx.Now(ctx)
	if err != nil {
		return nil, err
	}
	var rows []row
	afterAt, afterID := position(tx, after)
	if err := tx.SelectContext(ctx, &rows, queriesFor(tx.Dialect).listByAttempt, tenantID, attemptID, afterAt, afterID, limit); err != nil {
		return nil, fmt.Errorf("list decisions of attempt: %w", err)
	}
	return decisionsOf(rows, now), nil
}

func position(tx *sqldb.Tx, p *Position) (at, id any) {
	if p == nil {
		return nil, nil
	}
	return tx.Dialect.Time(p.RequestedAt), p.DecisionID
}

func decisionsOf(rows []row, now time.Time) []Decision {
	out := make([]Decision, len(rows))
	for i, r := range rows {
		out[i] = r.decision(now)
	}
	return out
}

// Hooks keep decisions in step with the run-lease core: when an attempt ends in any way
// (complete, release, lost), its pending decisions close in the same transaction, as
// cancelled, or as expired when their ExpiresAt had already passed (they read as expired
// already, and closing must not change what a reader saw).
func Hooks() runs.Hooks {
	return runs.Hooks{AttemptEnded: attemptEnded}
}

func attemptEnded(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, now time.Time) error {
	if _, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).closeForAttempt, tenantID, attemptID, tx.Dialect.Time(now)); err != nil {
		return fmt.Errorf("close decisions of ended attempt: %w", err)
	}
	return nil
}

// ExpireBatch bounds one ExpirePending transaction (well below SQL Server's lock
// escalation at about 5,000 locks).
const ExpireBatch = 500

// ExpirePending marks pending decisions whose ExpiresAt has passed as expired, across
// tenants, in bounded batches (one short transaction each) until a batch comes back short.
// It returns how many it marked. Every replica may run it: a decision another replica or an
// answer holds is skipped and found again next time. Reads never wait for it: a pending
// decision past its ExpiresAt already reads as expired.
func ExpirePending(ctx context.Context, db *sqldb.DB) (int, error) {
	return expirePending(ctx, db, ExpireBatch)
}

func expirePending(ctx context.Context, db *sqldb.DB, batch int) (int, error) {
	total := 0
	for {
		var n int64
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).expire, tx.Dialect.Time(now), batch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("expire pending decisions: %w", err)
		}
		total += int(n)
		if n < int64(batch) || ctx.Err() != nil {
			return total, nil
		}
	}
}
