// Package decisions keeps DecisionRequests (DESIGN.md section 5): a holder asks a person
// for a decision under its lease, an admin answers it from the inbox, and the holder reads
// the answer back. A pending decision closes exactly once: answered (approved or rejected,
// checked against the decision: options.go), cancelled (its attempt ended first) or expired
// (its ExpiresAt passed first).
//
// The attempt's phase follows its decisions. A request moves the attempt to
// awaiting_decision and keeps, on the decision (PriorPhase, a declared addition), the phase
// to return to: the attempt's phase, or, when the attempt already awaits (another decision
// is pending), the phase its newest decision keeps, so a wait over several decisions
// returns to the phase from before the wait. When a decision is answered or marked expired,
// and it was the last decision the attempt awaited (no other is pending, expiry by time
// counted), the attempt returns to the phase its newest decision keeps, provided it is
// still running and still awaiting_decision: a holder that moved the phase itself (a patch,
// a checkpoint) keeps what it set, and an ended attempt is left alone. Two decisions
// pending at once: answering the first leaves the attempt awaiting; answering the second
// restores the phase. "Newest" is by RequestedAt (milliseconds), then DecisionId: two
// requests of one attempt within a millisecond are ordered arbitrarily, which matters only
// if the holder also changed the phase between them. Every such change locks the attempt row before the decision rows, the
// lock order of every writer of both (DESIGN.md section 4).
package decisions

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/jcs"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/strictjson"
	"github.com/ledger-dev/ledger/internal/validate"
	"github.com/ledger-dev/ledger/internal/waits"
)

// Decision is one decision request and, once closed, how it closed, with where it comes
// from (the run, project, subject and agent of its attempt) so an inbox can show it.
type Decision struct {
	DecisionID uuid.UUID `db:"DecisionId"`
	AttemptID  uuid.UUID `db:"AttemptId"`
	// RunID, ProjectID, Subject and AgentID are the attempt's run and what it works on.
	// Subject is nil only while retention is deleting the run (its attempt and decisions
	// follow in the next moments).
	RunID          uuid.UUID        `db:"RunId"`
	ProjectID      string           `db:"ProjectId"`
	Subject        *string          `db:"Subject"`
	AgentID        string           `db:"AgentId"`
	TenantID       string           `db:"TenantId"`
	Kind           api.DecisionKind `db:"Kind"`
	ApprovalID     uuid.NullUUID    `db:"ApprovalId"`
	ProposalHash   *string          `db:"ProposalHash"`
	Options        json.RawMessage  `db:"-"`
	Recommendation *string          `db:"Recommendation"`
	// Status is the effective status: a pending decision whose ExpiresAt has passed reads
	// as expired before the background job marks it so.
	Status      api.DecisionStatus `db:"Status"`
	RequestedAt time.Time          `db:"RequestedAt"`
	AnsweredAt  *time.Time         `db:"AnsweredAt"`
	Answer      json.RawMessage    `db:"-"`
	AnsweredBy  *string            `db:"AnsweredBy"`
	ExpiresAt   *time.Time         `db:"ExpiresAt"`
	Version     sqldb.RowVersion   `db:"Version"`
}

// Item is the decision as a listing shows it: its wire form and its ETag.
func (d Decision) Item() api.DecisionItem {
	return api.DecisionItem{Decision: d.Wire(), ETag: d.Version.ETag()}
}

// Wire returns the decision as the API sends it.
func (d Decision) Wire() api.Decision {
	w := api.Decision{DecisionID: d.DecisionID, AttemptID: d.AttemptID, Kind: d.Kind, ProposalHash: d.ProposalHash,
		Options: strictjson.Stored(d.Options), Recommendation: d.Recommendation, Status: d.Status,
		RequestedAt: api.NewTime(d.RequestedAt), AnsweredAt: api.TimeOf(d.AnsweredAt), Answer: strictjson.Stored(d.Answer),
		AnsweredBy: d.AnsweredBy, ExpiresAt: api.TimeOf(d.ExpiresAt), ApprovalID: ids.Ptr(d.ApprovalID)}
	// Every read joins the attempt (always there: a foreign key) and its run.
	w.RunID, w.ProjectID, w.Subject, w.AgentID = d.RunID, d.ProjectID, d.Subject, d.AgentID
	return w
}

// row is a stored decision: the JSON columns scan as text.
type row struct {
	Decision
	OptionsJSON runs.JSONText `db:"OptionsJson"`
	AnswerJSON  runs.JSONText `db:"AnswerJson"`
	// PriorPhase is the phase closing the decision returns its attempt to (NULL on rows
	// written before migration 000012).
	PriorPhase sql.NullInt32 `db:"PriorPhase"`
	// Rank orders the pending-first inbox: 0 pending (by time), 1 the rest.
	Rank int `db:"Rank"`
}

// decision returns the row as its caller sees it at now: the one read rule of a
// decision's status, shared by every read here and by the attempt timeline (ByIDs).
func (r row) decision(now time.Time) Decision {
	d := r.Decision
	if len(r.OptionsJSON) > 0 {
		d.Options = json.RawMessage(r.OptionsJSON)
	}
	if len(r.AnswerJSON) > 0 {
		d.Answer = json.RawMessage(r.AnswerJSON)
	}
	if expiredAt(d.Status, d.ExpiresAt, now) {
		d.Status = api.DecisionExpired
	}
	return d
}

// expiredAt reports whether a decision stored with status is expired at now: pending, with
// an ExpiresAt that is not after now. ExpirePending marks exactly these.
func expiredAt(status api.DecisionStatus, expiresAt *time.Time, now time.Time) bool {
	return status == api.DecisionPending && expiresAt != nil && !expiresAt.After(now)
}

// Request is what a holder asks.
type Request struct {
	Kind           api.DecisionKind
	ProposalHash   *string
	Options        json.RawMessage // nil: none
	Recommendation *string
	// ExpiresIn, when positive, closes the decision as expired that long after it is asked.
	ExpiresIn time.Duration
	// IdempotencyKey, when set, names the decision once per run: asked again under any
	// attempt of the run with the same request, it is the same decision.
	IdempotencyKey *string
}

// hash is the hash of what defines the request, kept with an idempotency key: the same
// key with another hash is idempotency_key_reused.
func (r Request) hash() (string, error) {
	doc := struct {
		Kind           api.DecisionKind `json:"kind"`
		ProposalHash   *string          `json:"proposalHash"`
		Options        json.RawMessage  `json:"options"`
		Recommendation *string          `json:"recommendation"`
		ExpiresIn      int64            `json:"expiresInMs"`
	}{r.Kind, r.ProposalHash, r.Options, r.Recommendation, r.ExpiresIn.Milliseconds()}
	if len(doc.Options) == 0 {
		doc.Options = json.RawMessage("null")
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	c, err := jcs.Canonicalize(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// Answer is an admin's answer.
type Answer struct {
	// Status is Approved or Rejected.
	Status     api.DecisionStatus
	Answer     json.RawMessage // nil: none
	ApprovalID *uuid.UUID
	// KeyID is the answering key (AnsweredBy).
	KeyID string
	// IfMatch is the condition (If-Match) the current version must meet.
	IfMatch sqldb.VersionMatcher
}

// Position is a keyset position in RequestedAt, DecisionId order; in the inbox without a
// status filter, in (Rank, RequestedAt, DecisionId) order, Rank 0 for a pending decision
// and 1 for the others.
type Position struct {
	Rank        int
	RequestedAt time.Time
	DecisionID  uuid.UUID
}

// ListFilter narrows the inbox.
type ListFilter struct {
	// Status, when set, matches the effective status.
	Status *api.DecisionStatus
	// ProjectID, when set, keeps the decisions of that project's attempts.
	ProjectID *string
	// Kind, RequestedFrom (inclusive), RequestedTo (exclusive), AgentID, ReleaseID (the
	// attempt's) and RunKind (its run's) narrow to what the decisions insight counts.
	Kind                        *api.DecisionKind
	RequestedFrom, RequestedTo  *time.Time
	AgentID, ReleaseID, RunKind *string
	// After continues a listing after this position (nil: from the start).
	After *Position
	Limit int
}

// DefaultMaxPending is how many pending decisions one attempt may have at once
// (--max-pending-decisions).
const DefaultMaxPending = 100

// Store keeps decisions. Holder writes pass the run-lease core's fence.
type Store struct {
	db  *sqldb.DB
	svc *runs.Service
	q   *queries
	// maxPending caps an attempt's pending decisions: one attempt must not grow the inbox
	// (and every page that lists it) without end.
	maxPending int
	// notify is told of decisions requested and closed, in their transactions (nil: nobody).
	notify Notifier
}

// Notifier is told, inside the transaction that made the change, of each decision requested
// and each decision closed (answered, expired, or cancelled with its attempt), so an outbox
// row it writes commits or rolls back with the change. Wants lets a close that touches
// several decisions skip reading them when nobody listens to the tenant's closes.
type Notifier interface {
	Wants(ctx context.Context, tx *sqldb.Tx, tenantID string, ev api.WebhookEvent) (bool, error)
	DecisionRequested(ctx context.Context, tx *sqldb.Tx, d Decision) error
	DecisionClosed(ctx context.Context, tx *sqldb.Tx, d Decision) error
}

// WithNotifier sets who is told of this store's requests and answers and returns s; call it
// before the store serves.
func (s *Store) WithNotifier(n Notifier) *Store {
	s.notify = n
	return s
}

// NewStore returns the decision store of db; svc fences holder writes. An attempt may
// have DefaultMaxPending pending decisions at once.
func NewStore(db *sqldb.DB, svc *runs.Service) *Store {
	return &Store{db: db, svc: svc, q: queriesFor(db.Dialect), maxPending: DefaultMaxPending}
}

// WithMaxPending sets how many pending decisions one attempt may have at once (n <= 0:
// DefaultMaxPending) and returns s; call it before the store serves.
func (s *Store) WithMaxPending(n int) *Store {
	if n <= 0 {
		n = DefaultMaxPending
	}
	s.maxPending = n
	return s
}

// Request records a pending decision under the holder's fence and moves the attempt to
// awaiting_decision (see the package doc for the phase it returns to). With an idempotency
// key that the run already used, it answers that decision (created false), pending or
// closed, and writes nothing; with another request under that key, IdempotencyKeyReused.
// Errors: Invalid (a choice decision without a usable list of options, options.go),
// NotFound (no such attempt for the tenant), StaleLease, LeaseExpired, DecisionLimit (the
// attempt already has its most pending decisions); nothing is written when it fails.
func (s *Store) Request(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, r Request) (Decision, error) {
	d, _, err := s.Ask(ctx, tenantID, attemptID, token, r)
	return d, err
}

// Ask is Request that also reports whether the decision is new (false: the run asked it
// before under the same idempotency key).
func (s *Store) Ask(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, r Request) (d Decision, created bool, err error) {
	if err := checkOptions(r.Kind, r.Options); err != nil {
		return Decision{}, false, err
	}
	var hash *string
	if r.IdempotencyKey != nil {
		h, err := r.hash()
		if err != nil {
			return Decision{}, false, fmt.Errorf("request decision: %w", err)
		}
		hash = &h
	}
	// Without a key there is no exact repeat: nothing recognises a retry, so each one asks anew.
	d, _, err = runs.WriteFenced(ctx, s.svc, tenantID, attemptID, token, runs.FencedWrite[Decision]{
		What: "request decision",
		Do: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (Decision, bool, error) {
			created = false
			if r.IdempotencyKey != nil {
				if d, found, err := s.byKey(ctx, tx, f, *r.IdempotencyKey, *hash); found || err != nil {
					return d, false, err
				}
			}
			created = true
			d, err := s.request(ctx, tx, f, r, hash)
			return d, true, err
		},
	})
	return d, created, err
}

// byKey finds the run's decision asked under key: found with the decision when the
// request is the same (hash), IdempotencyKeyReused when it differs.
func (s *Store) byKey(ctx context.Context, tx *sqldb.Tx, f runs.Fenced, key, hash string) (Decision, bool, error) {
	var r struct {
		row
		RequestHash *string `db:"RequestHash"`
	}
	err := tx.GetContext(ctx, &r, s.q.byKey, f.Run.TenantID, f.Run.RunID, tx.Dialect.Text(key))
	if errors.Is(err, sqldb.ErrNotFound) {
		return Decision{}, false, nil
	}
	if err != nil {
		return Decision{}, false, fmt.Errorf("read decision by idempotency key: %w", err)
	}
	if r.RequestHash == nil || *r.RequestHash != hash {
		return Decision{}, false, apperr.New(api.CodeIdempotencyKeyReused,
			"the run asked another decision under idempotency key %q", key)
	}
	return r.row.decision(f.Now), true, nil
}

// request writes a fenced attempt's decision request and moves the attempt to
// awaiting_decision.
func (s *Store) request(ctx context.Context, tx *sqldb.Tx, f runs.Fenced, r Request, hash *string) (Decision, error) {
	tenantID, attemptID := f.Attempt.TenantID, f.Attempt.AttemptID
	var expires *time.Time
	if r.ExpiresIn > 0 {
		t := f.Now.Add(r.ExpiresIn)
		expires = &t
	}
	var pending int
	if err := tx.GetContext(ctx, &pending, s.q.countPending, tenantID, attemptID, tx.Dialect.Time(f.Now), s.maxPending); err != nil {
		return Decision{}, fmt.Errorf("count pending decisions: %w", err)
	}
	if pending >= s.maxPending {
		return Decision{}, apperr.New(api.CodeDecisionLimit,
			"the attempt has %d pending decisions, as many as it may have: wait for answers (or expiry) before asking more", pending)
	}
	prior := int(f.Attempt.Phase)
	if f.Attempt.Phase == api.PhaseAwaitingDecision {
		// Already waiting: keep the phase from before the wait.
		if p, err := newestPrior(ctx, tx, tenantID, attemptID); err != nil {
			return Decision{}, err
		} else if p.Valid {
			prior = int(p.Int32)
		}
	}
	id := tx.Dialect.NewID()
	args := append(insertArgs(tx.Dialect, id, attemptID, tenantID, r, f.Now, expires, prior),
		f.Run.RunID, tx.Dialect.NullText(r.IdempotencyKey), tx.Dialect.NullText(hash))
	_, err := tx.ExecContext(ctx, s.q.insert, args...)
	if err != nil {
		return Decision{}, fmt.Errorf("insert decision: %w", err)
	}
	if err := attempts.SetPhase(ctx, tx, attemptID, api.PhaseAwaitingDecision); err != nil {
		return Decision{}, err
	}
	d, err := s.get(ctx, tx, s.q.get, tenantID, id, f.Now)
	if err == nil && s.notify != nil {
		err = s.notify.DecisionRequested(ctx, tx, d)
	}
	return d, err
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
	r, err := s.getRow(ctx, tx, query, tenantID, id)
	if err != nil {
		return Decision{}, err
	}
	return r.decision(now), nil
}

func (s *Store) getRow(ctx context.Context, tx *sqldb.Tx, query, tenantID string, id uuid.UUID) (row, error) {
	var r row
	err := tx.GetContext(ctx, &r, query, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return row{}, apperr.New(api.CodeNotFound, "no decision %s", id)
	}
	if err != nil {
		return row{}, fmt.Errorf("read decision: %w", err)
	}
	return r, nil
}

// ByIDs reads the tenant's decisions among ids inside the caller's transaction, under the
// same read rule as every read here (a pending decision past its ExpiresAt is expired), in
// no particular order; ids of missing or other tenants' decisions are left out. The
// attempt timeline reads its decision entries with it.
func ByIDs(ctx context.Context, tx *sqldb.Tx, tenantID string, ids []uuid.UUID) ([]Decision, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return nil, err
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = id.String()
	}
	doc, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var rows []row
	if err := tx.SelectContext(ctx, &rows, queriesFor(tx.Dialect).byIDs, tenantID, tx.Dialect.JSON(string(doc))); err != nil {
		return nil, fmt.Errorf("read decisions by id: %w", err)
	}
	return decisionsOf(rows, now), nil
}

// Answer closes a pending decision as approved or rejected and, when it was the last
// decision its attempt awaited, returns the attempt to its phase from before the wait.
// The checks run in this order: NotFound (missing or another tenant's), DecisionClosed (no
// longer pending, expired by time included, whatever the If-Match says: it is the more
// useful answer for a client that raced another), PreconditionFailed (If-Match is not the
// pending decision's version), Invalid (the answer does not fit the decision, naming the
// field: options.go). A refused answer changes nothing.
func (s *Store) Answer(ctx context.Context, tenantID string, id uuid.UUID, a Answer) (Decision, error) {
	if !api.AnswerStatus(a.Status).Valid() {
		return Decision{}, apperr.FieldsInvalid(validate.NotOneOf("status", api.AnswerStatus(a.Status)))
	}
	var out Decision
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		// The attempt row is locked before the decision row (the order of every writer of
		// both), so the decision is read once without a lock to learn its attempt.
		seen, err := s.getRow(ctx, tx, s.q.get, tenantID, id)
		if err != nil {
			return err
		}
		att, err := attempts.Lock(ctx, tx, tenantID, seen.AttemptID)
		if err != nil {
			return err
		}
		cur, err := s.get(ctx, tx, s.q.lock, tenantID, id, now)
		if err != nil {
			return err
		}
		if err := answerable(cur, a.IfMatch); err != nil {
			return err
		}
		if err := checkAnswer(cur, a); err != nil {
			return err
		}
		var approval any
		if a.ApprovalID != nil {
			approval = *a.ApprovalID
		}
		res, err := tx.ExecContext(ctx, s.q.answer, tenantID, id, a.Status, runs.JSONText(a.Answer).Arg(tx.Dialect), approval,
			a.KeyID, tx.Dialect.Time(now), tx.Dialect.Version(cur.Version))
		if err != nil {
			return fmt.Errorf("answer decision: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			// The locks rule this out on SQL Server. Should another answer have landed after
			// the check all the same (SQLite's fault injection puts one there), answer as the
			// check would have: closed, or stale.
			again, gerr := s.get(ctx, tx, s.q.lock, tenantID, id, now)
			if gerr != nil {
				return gerr
			}
			if cerr := answerable(again, a.IfMatch); cerr != nil {
				return cerr
			}
			return fmt.Errorf("answer decision %s: changed %d rows, want 1 (%v)", id, n, err)
		}
		if err := restorePhase(ctx, tx, tenantID, att, now); err != nil {
			return err
		}
		if err := s.svc.CloseWaits(ctx, tx, tenantID, runs.WaitDecision, []uuid.UUID{id}, now); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, s.q.get, tenantID, id, now)
		if err == nil && s.notify != nil {
			err = s.notify.DecisionClosed(ctx, tx, out)
		}
		return err
	})
	if err != nil {
		return Decision{}, fmt.Errorf("answer decision: %w", err)
	}
	s.svc.Waits().Notify(runs.AttemptKey(tenantID, out.AttemptID))
	return out, nil
}

// WaitClosed reads a decision of the tenant, waiting up to d while it is pending: it answers
// as soon as the decision is closed (answered, expired, or cancelled with its attempt), or
// at d, or when the service stops waits, with the decision as it then is. An answer or the
// attempt's end in this process wakes it; another replica's is seen on the poll interval.
func (s *Store) WaitClosed(ctx context.Context, tenantID string, id uuid.UUID, d time.Duration) (Decision, error) {
	first, err := s.Get(ctx, tenantID, id)
	if err != nil || d <= 0 || first.Status != api.DecisionPending {
		return first, err
	}
	return waits.Until(ctx, s.svc.Waits(), runs.AttemptKey(tenantID, first.AttemptID), d, s.svc.Config().PollInterval,
		func(ctx context.Context) (Decision, bool, time.Time, error) {
			cur, err := s.Get(ctx, tenantID, id)
			var expires time.Time
			if cur.ExpiresAt != nil {
				expires = *cur.ExpiresAt // reads as expired from then on, with no write
			}
			return cur, cur.Status != api.DecisionPending, expires, err
		})
}

// AnswerIfMatch is when an answer needs an If-Match condition: always (an inbox answers the
// version it showed). The route's Op declares it, so web.IfMatch refuses a request without
// one before the store is asked; answerable applies it to every other caller.
const AnswerIfMatch = ifmatch.Required

// answerable refuses an answer to a decision that is no longer pending (DecisionClosed) or
// whose current version does not meet the answer's If-Match (PreconditionRequired without
// one, PreconditionFailed when stale).
func answerable(d Decision, ifMatch sqldb.VersionMatcher) error {
	if d.Status != api.DecisionPending {
		return apperr.New(api.CodeDecisionClosed, "the decision is %s, no longer pending", d.Status)
	}
	return ifmatch.Update(AnswerIfMatch, ifMatch, d.Version, "decision "+d.DecisionID.String())
}

// newestPrior is the phase the attempt's newest decision keeps (not Valid when the attempt
// has no decision, or only ones written before migration 000012).
func newestPrior(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID) (sql.NullInt32, error) {
	var p sql.NullInt32
	err := tx.GetContext(ctx, &p, queriesFor(tx.Dialect).newestPrior, tenantID, attemptID)
	if err != nil && !errors.Is(err, sqldb.ErrNotFound) {
		return p, fmt.Errorf("read the phase to restore: %w", err)
	}
	return p, nil
}

// restorePhase returns the attempt a, which the caller has locked and whose decision has
// just closed, to the phase its newest decision keeps, when it still runs, still awaits a
// decision, and no decision of it is pending any more (see the package doc).
func restorePhase(ctx context.Context, tx *sqldb.Tx, tenantID string, a attempts.Attempt, now time.Time) error {
	if a.State != api.AttemptRunning || a.Phase != api.PhaseAwaitingDecision {
		return nil
	}
	p, err := newestPrior(ctx, tx, tenantID, a.AttemptID)
	if err != nil || !p.Valid || api.Phase(p.Int32) == api.PhaseAwaitingDecision {
		return err
	}
	if _, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).restorePhase, tenantID, a.AttemptID, p.Int32, tx.Dialect.Time(now)); err != nil {
		return fmt.Errorf("restore the attempt's phase: %w", err)
	}
	return nil
}

// List is the tenant's inbox: pending decisions first, then the others (answered,
// expired, cancelled), each group oldest request first (RequestedAt, then DecisionId), so
// the decisions waiting longest come first and decisions asked while an admin pages through
// land on a later page instead of being skipped. A decision that closes while an admin
// pages moves from the first group to the second, and may be seen twice or not at all
// across pages, as any keyset over a changing order. With a status filter there is one
// group. f.ProjectID keeps the decisions of that project's attempts.
func (s *Store) List(ctx context.Context, tenantID string, f ListFilter) ([]Decision, error) {
	var out []Decision
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var rows []row
		afterAt, afterID := position(tx, f.After)
		var kind any
		if f.Kind != nil {
			kind = int(*f.Kind)
		}
		if f.Status != nil {
			err = tx.SelectContext(ctx, &rows, s.q.list, tenantID, *f.Status, tx.Dialect.Time(now), f.ProjectID,
				afterAt, afterID, f.Limit, kind, tx.Dialect.NullTime(f.RequestedFrom), tx.Dialect.NullTime(f.RequestedTo),
				f.AgentID, f.ReleaseID, f.RunKind)
		} else {
			var rank any
			if f.After != nil {
				rank = f.After.Rank
			}
			err = tx.SelectContext(ctx, &rows, s.q.listPendingFirst, tenantID, tx.Dialect.Time(now), f.ProjectID,
				rank, afterAt, afterID, f.Limit, kind, tx.Dialect.NullTime(f.RequestedFrom), tx.Dialect.NullTime(f.RequestedTo),
				f.AgentID, f.ReleaseID, f.RunKind)
		}
		if err != nil {
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

// Rank is d's group in the pending-first inbox: 0 pending, 1 any other status.
func Rank(d Decision) int {
	if d.Status == api.DecisionPending {
		return 0
	}
	return 1
}

// ListByAttempt lists an attempt's decisions in RequestedAt, DecisionId order. NotFound when
// the attempt is missing or another tenant's.
func (s *Store) ListByAttempt(ctx context.Context, tenantID string, attemptID uuid.UUID, after *Position, limit int) ([]Decision, error) {
	return attempts.ListOf(ctx, s.db, tenantID, attemptID, "list decisions of attempt", func(tx *sqldb.Tx) ([]Decision, error) {
		return ForAttempt(ctx, tx, tenantID, attemptID, after, limit)
	})
}

// ChainReach is how far GET /v1/runs/{id}/decisions follows a run's continuation chain
// each way (runs continued from it and continuing it).
const ChainReach = 8

// ListByRun lists the decisions of a run's attempts and of the runs of its continuation
// chain (at most ChainReach each way), in RequestedAt, DecisionId order. NotFound when the
// run is missing or another tenant's.
func (s *Store) ListByRun(ctx context.Context, tenantID string, runID uuid.UUID, after *Position, limit int) ([]Decision, error) {
	chain, _, err := s.svc.Chain(ctx, tenantID, runID, ChainReach)
	if err != nil {
		return nil, err
	}
	list := make([]string, len(chain))
	for i, r := range chain {
		list[i] = r.RunID.String()
	}
	doc, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var out []Decision
	err = s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var rows []row
		afterAt, afterID := position(tx, after)
		if err := tx.SelectContext(ctx, &rows, s.q.listByRun, tenantID, tx.Dialect.JSON(string(doc)), afterAt, afterID, limit); err != nil {
			return err
		}
		out = decisionsOf(rows, now)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list decisions of run: %w", err)
	}
	return out, nil
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

// Hooks keep decisions in step with the run-lease core. Decisions belong to the run
// (DESIGN.md section 5b): a pending decision stays pending when the attempt that asked it
// ends released, lost or parked, so a person is never asked twice and no answer is lost.
// When the run ends in any way, its pending decisions (of every attempt) close in the same
// transaction, as cancelled, or as expired when their ExpiresAt had already passed (they
// read as expired already, and closing must not change what a reader saw).
func Hooks() runs.Hooks { return NotifyingHooks(nil) }

// NotifyingHooks are Hooks that also tell n (nil: nobody) of each decision they close.
func NotifyingHooks(n Notifier) runs.Hooks {
	return runs.Hooks{RunChanged: func(ctx context.Context, tx *sqldb.Tx, run runs.Run) error {
		return runChanged(ctx, tx, run, n)
	}}
}

func runChanged(ctx context.Context, tx *sqldb.Tx, run runs.Run, n Notifier) error {
	if run.State != api.RunEnded || run.EndedAt == nil {
		return nil
	}
	closing, err := pendingToNotify(ctx, tx, run.TenantID, run.RunID, n)
	if err != nil {
		return err
	}
	q := queriesFor(tx.Dialect).closeForRun
	if _, err := tx.ExecContext(ctx, q, run.TenantID, run.RunID, tx.Dialect.Time(*run.EndedAt)); err != nil {
		return fmt.Errorf("close decisions of ended run: %w", err)
	}
	return notifyClosed(ctx, tx, run.TenantID, closing, n)
}

// pendingToNotify reads, before a close of the run's pending decisions, the ones it will
// close, when n listens to the tenant's closes (none otherwise: no statement). A run's
// attempts have at most their cap of pending decisions each (DefaultMaxPending unless
// configured), and ExpireBatch bounds the read beyond that.
func pendingToNotify(ctx context.Context, tx *sqldb.Tx, tenantID string, runID uuid.UUID, n Notifier) ([]uuid.UUID, error) {
	if n == nil {
		return nil, nil
	}
	if ok, err := n.Wants(ctx, tx, tenantID, api.EventDecisionClosed); err != nil || !ok {
		return nil, err
	}
	doc, err := json.Marshal([]string{runID.String()})
	if err != nil {
		return nil, err
	}
	var rows []row
	if err := tx.SelectContext(ctx, &rows, queriesFor(tx.Dialect).listByRun, tenantID, tx.Dialect.JSON(string(doc)), nil, nil,
		ExpireBatch); err != nil {
		return nil, fmt.Errorf("read decisions of ending run: %w", err)
	}
	var out []uuid.UUID
	for _, r := range rows {
		// The stored status: a close changes only rows still stored pending.
		if r.Status == api.DecisionPending {
			out = append(out, r.DecisionID)
		}
	}
	return out, nil
}

// notifyClosed tells n of each decision of ids, read as the close left it.
func notifyClosed(ctx context.Context, tx *sqldb.Tx, tenantID string, ids []uuid.UUID, n Notifier) error {
	if len(ids) == 0 || n == nil {
		return nil
	}
	ds, err := ByIDs(ctx, tx, tenantID, ids)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.Status == api.DecisionPending {
			continue
		}
		if err := n.DecisionClosed(ctx, tx, d); err != nil {
			return err
		}
	}
	return nil
}

// ExpireBatch bounds how many attempts one round of ExpirePending reads.
const ExpireBatch = 500

// due is an attempt with a pending decision past its ExpiresAt.
type due struct {
	TenantID  string    `db:"TenantId"`
	AttemptID uuid.UUID `db:"AttemptId"`
}

// ExpirePending marks pending decisions whose ExpiresAt has passed as expired, across
// tenants, and returns each attempt that awaited only those to its phase from before the
// wait. It reads the attempts that have such decisions in rounds of at most ExpireBatch
// (one maintenance read each), then expires each attempt's in one short transaction of
// the attempt's tenant that locks the attempt first, as every writer of an attempt and its
// decisions does; it stops when a round comes back short. It returns how many decisions it
// marked. Every replica may run it: a second replica waits for the first on the attempt's
// lock and then finds nothing left. Reads never wait for it: a pending decision past its
// ExpiresAt already reads as expired.
func ExpirePending(ctx context.Context, db *sqldb.DB) (int, error) {
	return expirePending(ctx, db, ExpireBatch, nil)
}

// ExpirePendingNotify is ExpirePending that also tells n of each decision it marks expired,
// in the transaction that marks it.
func ExpirePendingNotify(ctx context.Context, db *sqldb.DB, n Notifier) (int, error) {
	return expirePending(ctx, db, ExpireBatch, n)
}

func expirePending(ctx context.Context, db *sqldb.DB, batch int, notify Notifier) (int, error) {
	total := 0
	for {
		var dues []due
		err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			return tx.SelectContext(ctx, &dues, queriesFor(tx.Dialect).due, tx.Dialect.Time(now), batch)
		})
		if err != nil {
			return total, fmt.Errorf("expire pending decisions: find them: %w", err)
		}
		for _, d := range dues {
			n, err := expireAttempt(ctx, db, d, notify)
			total += n
			if err != nil {
				return total, fmt.Errorf("expire pending decisions of attempt %s: %w", d.AttemptID, err)
			}
		}
		if len(dues) < batch || ctx.Err() != nil {
			return total, nil
		}
	}
}

// expireAttempt expires the attempt's pending decisions past their ExpiresAt and restores
// its phase when it awaited only those.
func expireAttempt(ctx context.Context, db *sqldb.DB, d due, notify Notifier) (int, error) {
	var n int64
	err := db.Write(ctx, sqldb.TenantScope(d.TenantID), func(tx *sqldb.Tx) error {
		n = 0
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		a, err := attempts.Lock(ctx, tx, d.TenantID, d.AttemptID)
		if apperr.Is(err, api.CodeNotFound) {
			return nil // purged meanwhile
		}
		if err != nil {
			return err
		}
		var expired []uuid.UUID
		if err := tx.SelectContext(ctx, &expired, queriesFor(tx.Dialect).expireForAttempt, d.TenantID, d.AttemptID,
			tx.Dialect.Time(now)); err != nil {
			return err
		}
		if n = int64(len(expired)); n == 0 {
			return nil
		}
		if err := restorePhase(ctx, tx, d.TenantID, a, now); err != nil {
			return err
		}
		// A run parked on them may be due now; claimers of other processes find it by polling.
		if _, err := runs.CloseWaits(ctx, tx, d.TenantID, runs.WaitDecision, expired, now); err != nil {
			return err
		}
		return notifyClosed(ctx, tx, d.TenantID, expired, notify)
	})
	return int(n), err
}

// insertArgs is the insert's arguments. The statement only stores its text, so all of it
// goes as Dialect.Text (the options as Dialect.JSON): one declaration list (SQL Server's
// plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, id, attemptID uuid.UUID, tenantID string, r Request, now time.Time, expires *time.Time, prior int) []any {
	return []any{id, attemptID, d.Text(tenantID), int(r.Kind), d.NullText(r.ProposalHash), runs.JSONText(r.Options).Arg(d),
		d.NullText(r.Recommendation), d.Time(now), d.NullTime(expires), int32(prior)}
}
