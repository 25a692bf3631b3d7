// Package calls keeps CallRecords (seed 001): every model, tool or HTTP call an attempt
// makes. A holder records a call when it starts and finishes it once, both under its lease
// (fenced, DESIGN.md section 4); a retry of either answers as the first did.
package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/seqlog"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
)

// Finished reports whether status is one a holder finishes a call in (Abandoned is not:
// only the end of the attempt sets it).
func Finished(status api.CallStatus) bool { return api.CallFinishStatus(status).Valid() }

// Call is one call record of an attempt. Its Status starts Started and finishes once, in
// Succeeded, Failed or Denied, or is Abandoned when the attempt ends first (stored as the wire
// string, the seed's nvarchar(16)).
type Call struct {
	CallID           uuid.UUID        `db:"CallId"`
	AttemptID        uuid.UUID        `db:"AttemptId"`
	TenantID         string           `db:"TenantId"`
	Sequence         int              `db:"Sequence"`
	Kind             api.CallKind     `db:"Kind"`
	Target           string           `db:"Target"`
	RequestHash      string           `db:"RequestHash"`
	PolicyDecisionID uuid.NullUUID    `db:"PolicyDecisionId"`
	ReceiptRef       *string          `db:"ReceiptRef"`
	Status           api.CallStatus   `db:"Status"`
	StartedAt        time.Time        `db:"StartedAt"`
	EndedAt          *time.Time       `db:"EndedAt"`
	Version          sqldb.RowVersion `db:"Version"`
	usage
}

// usage is what a model call names when it starts and reports when it finishes (declared
// additions, DESIGN.md 5b). FinishReasons is stored as a JSON array.
type usage struct {
	Model                    *string `db:"Model"`
	Provider                 *string `db:"Provider"`
	Operation                *string `db:"Operation"`
	ResponseModel            *string `db:"ResponseModel"`
	FinishReasons            *string `db:"FinishReasons"`
	InputTokens              *int64  `db:"InputTokens"`
	OutputTokens             *int64  `db:"OutputTokens"`
	CacheReadInputTokens     *int64  `db:"CacheReadInputTokens"`
	CacheCreationInputTokens *int64  `db:"CacheCreationInputTokens"`
	ReasoningOutputTokens    *int64  `db:"ReasoningOutputTokens"`
	CostMicros               *int64  `db:"CostMicros"`
}

// counts are the stored usage counts as the wire's Usage, nil when the finish reported none.
func (u usage) counts() *api.Usage {
	w := api.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.CacheReadInputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens}
	if w == (api.Usage{}) {
		return nil
	}
	return &w
}

// reasons decodes the stored finish reasons (nil when none were reported; a value this
// service did not write is dropped rather than failing the read).
func (u usage) reasons() []string {
	if u.FinishReasons == nil {
		return nil
	}
	var rs []string
	if json.Unmarshal([]byte(*u.FinishReasons), &rs) != nil {
		return nil
	}
	return rs
}

// Wire returns the call as the API sends it.
func (c Call) Wire() api.Call {
	return api.Call{CallID: c.CallID, AttemptID: c.AttemptID, Sequence: int32(c.Sequence), Kind: c.Kind,
		Target: c.Target, RequestHash: c.RequestHash, PolicyDecisionID: ids.Ptr(c.PolicyDecisionID),
		ReceiptRef: c.ReceiptRef, Status: c.Status, StartedAt: api.NewTime(c.StartedAt),
		EndedAt: api.TimeOf(c.EndedAt), Model: c.Model, Provider: c.Provider, Operation: c.Operation, Usage: c.counts(),
		ResponseModel: c.ResponseModel, FinishReasons: c.reasons(), CostMicros: c.CostMicros}
}

// Draft is a call a holder records as it starts it.
type Draft struct {
	// Sequence is unique per attempt, 0..2^31-1 (the seed's int).
	Sequence int
	Kind     api.CallKind
	Target   string
	// RequestHash identifies the request: a retry of the same sequence with the same hash
	// is a repeat, with another hash a conflict.
	RequestHash      string
	PolicyDecisionID *uuid.UUID
	// Model, Provider and Operation name a model call (optional).
	Model, Provider, Operation *string
}

// Validate refuses a draft the columns cannot hold (Invalid naming each field), whoever
// filled it: the API's decoder checks the same bounds first for HTTP callers.
func (n Draft) Validate() error {
	fields := seqlog.SequenceFields(n.Sequence)
	if !n.Kind.Valid() {
		fields = append(fields, validate.NotOneOf("kind", n.Kind))
	}
	fields = validate.AppendTooLong(fields, "target", n.Target, 256)
	fields = validate.AppendTooLong(fields, "requestHash", n.RequestHash, 128)
	fields = appendTooLongPtr(fields, "model", n.Model, 128)
	fields = appendTooLongPtr(fields, "provider", n.Provider, 64)
	fields = appendTooLongPtr(fields, "operation", n.Operation, 32)
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// Finish is how a call ended.
type Finish struct {
	// Status is Succeeded, Failed or Denied.
	Status     api.CallStatus
	ReceiptRef *string
	// Usage, ResponseModel, FinishReasons (at most 8) and CostMicros are what a model call
	// reports (optional; counts non-negative).
	Usage         *api.Usage
	ResponseModel *string
	FinishReasons []string
	CostMicros    *int64
	// IfMatch, when set, is the condition (If-Match) the current version must meet (412
	// otherwise).
	IfMatch sqldb.VersionMatcher
}

// Validate refuses a finish that is not a holder's (Invalid naming each field).
func (f Finish) Validate() error {
	var fields []api.FieldError
	if !Finished(f.Status) {
		fields = append(fields, validate.NotOneOf("status", api.CallFinishStatus(f.Status)))
	}
	fields = appendTooLongPtr(fields, "receiptRef", f.ReceiptRef, 512)
	fields = appendTooLongPtr(fields, "responseModel", f.ResponseModel, 128)
	if len(f.FinishReasons) > maxFinishReasons {
		fields = append(fields, api.FieldError{Field: "finishReasons", Reason: fmt.Sprintf("must have at most %d items", maxFinishReasons)})
	}
	for i, r := range f.FinishReasons {
		fields = validate.AppendTooLong(fields, fmt.Sprintf("finishReasons[%d]", i), r, 32)
	}
	u := f.reported()
	for _, c := range []struct {
		field string
		n     *int64
	}{{"usage.inputTokens", u.InputTokens}, {"usage.outputTokens", u.OutputTokens},
		{"usage.cacheReadInputTokens", u.CacheReadInputTokens}, {"usage.cacheCreationInputTokens", u.CacheCreationInputTokens},
		{"usage.reasoningOutputTokens", u.ReasoningOutputTokens}, {"costMicros", u.CostMicros}} {
		if c.n != nil && *c.n < 0 {
			fields = append(fields, api.FieldError{Field: c.field, Reason: "must be 0 or more"})
		}
	}
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// maxFinishReasons bounds a finish's reasons (the stored JSON fits nvarchar(400)).
const maxFinishReasons = 8

// reported is what the finish writes of its usage; the call's start columns stay as they are.
func (f Finish) reported() usage {
	u := usage{ResponseModel: f.ResponseModel, CostMicros: f.CostMicros}
	if f.Usage != nil {
		u.InputTokens, u.OutputTokens = f.Usage.InputTokens, f.Usage.OutputTokens
		u.CacheReadInputTokens, u.CacheCreationInputTokens = f.Usage.CacheReadInputTokens, f.Usage.CacheCreationInputTokens
		u.ReasoningOutputTokens = f.Usage.ReasoningOutputTokens
	}
	if f.FinishReasons != nil {
		b, _ := json.Marshal(f.FinishReasons) // strings only: cannot fail
		r := string(b)
		u.FinishReasons = &r
	}
	return u
}

func appendTooLongPtr(fields []api.FieldError, name string, v *string, limit int) []api.FieldError {
	if v == nil {
		return fields
	}
	return validate.AppendTooLong(fields, name, *v, limit)
}

// Store keeps call records. Its writes pass the run-lease core's fence.
type Store struct {
	db   *sqldb.DB
	runs *runs.Service
	q    *queries
	held func(ctx context.Context, tx *sqldb.Tx, h BudgetHeld) error
}

// NewStore returns the call store of db; svc fences the writes.
func NewStore(db *sqldb.DB, svc *runs.Service) *Store {
	return &Store{db: db, runs: svc, q: queriesFor(db.Dialect)}
}

// conflictMarkers name the unique index on (AttemptId, Sequence) in both dialects.
var conflictMarkers = []string{"UX_Calls_Attempt_Sequence", "CallRecords.AttemptId, CallRecords.Sequence"}

// stored is a call with the fencing token of its attempt.
type stored struct {
	Call
	AttemptToken int64 `db:"AttemptToken"`
}

// textOrNil is an optional text argument: NULL, or the text as Dialect.Text.
func textOrNil(d sqldb.Dialect, v *string) any {
	if v == nil {
		return nil
	}
	return d.Text(*v)
}

// Record writes a started call of the attempt under the lease at token. It reports
// created=false for an exact repeat (same sequence, same request hash, same token), which
// answers with the stored row, as it now is, also after the lease has ended
// (runs.WriteFenced). Two statements on the common path: the fence and the insert (which
// answers the row). Errors: NotFound (no such attempt for this tenant), StaleLease,
// LeaseExpired, AttemptEnded, SequenceConflict (the sequence is taken by a call with
// another request hash), Invalid.
func (s *Store) Record(ctx context.Context, tenantID string, attemptID uuid.UUID, token int64, n Draft) (Call, bool, error) {
	if err := n.Validate(); err != nil {
		return Call{}, false, err
	}
	return seqlog.Write(ctx, s.runs, tenantID, attemptID, token, seqlog.Append[Call]{
		What: "record call",
		Insert: func(ctx context.Context, tx *sqldb.Tx, f runs.Fenced) (Call, error) {
			var c Call
			err := tx.GetContext(ctx, &c, s.q.insert, insertArgs(tx.Dialect, tx.Dialect.NewID(), f, n)...)
			if err := seqlog.Inserted(err, "insert call", conflictMarkers...); err != nil {
				return Call{}, err
			}
			return c, nil
		},
		AtSequence: func(ctx context.Context, tx *sqldb.Tx) (Call, error) {
			prev, err := s.read(ctx, tx, s.q.bySequence, tenantID, attemptID, int32(n.Sequence))
			return prev.Call, err
		},
		Repeat: func(prev Call) (Call, error) { return repeatRecord(prev, n) },
	})
}

func repeatRecord(prev Call, n Draft) (Call, error) {
	if prev.RequestHash != n.RequestHash || !same(prev.Model, n.Model) || !same(prev.Provider, n.Provider) ||
		!same(prev.Operation, n.Operation) {
		return Call{}, apperr.New(api.CodeSequenceConflict,
			"sequence %d of this attempt is already recorded with another request hash", n.Sequence)
	}
	return prev, nil
}

// read runs a statement returning one call with its attempt's token; sqldb.ErrNotFound
// when there is none (or the attempt is another tenant's).
func (s *Store) read(ctx context.Context, tx *sqldb.Tx, query string, args ...any) (stored, error) {
	var st stored
	err := tx.GetContext(ctx, &st, query, args...)
	if err != nil && !errors.Is(err, sqldb.ErrNotFound) {
		return stored{}, fmt.Errorf("read call: %w", err)
	}
	return st, err
}

// byID reads a call of the attempt with its attempt's token; NotFound when the call is
// missing or another tenant's.
func (s *Store) byID(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID, callID uuid.UUID) (stored, error) {
	st, err := s.read(ctx, tx, s.q.byID, tenantID, attemptID, callID)
	if errors.Is(err, sqldb.ErrNotFound) {
		return stored{}, apperr.New(api.CodeNotFound, "no call %s of attempt %s", callID, attemptID)
	}
	return st, err
}

// FinishCall records how the call ended, under the lease at token: Status, ReceiptRef
// and EndedAt. A call already finished the same way (same status and receipt, same token)
// answers with the stored row, also after the lease ended (runs.WriteFenced); a call
// finished another way is IllegalTransition. f.IfMatch, when set, must be the call's
// version (PreconditionFailed otherwise; a repeat is answered before it is compared, as
// the first answer was). Two statements on the common path: the fence and the update
// (which answers the row). Errors: NotFound (no such call of this attempt for this
// tenant), StaleLease, LeaseExpired, AttemptEnded, IllegalTransition, PreconditionFailed,
// Invalid.
func (s *Store) FinishCall(ctx context.Context, tenantID string, attemptID, callID uuid.UUID, token int64, f Finish) (Call, error) {
	if err := f.Validate(); err != nil {
		return Call{}, err
	}
	c, _, err := runs.WriteFenced(ctx, s.runs, tenantID, attemptID, token, runs.FencedWrite[Call]{
		What: "finish call",
		Do: func(ctx context.Context, tx *sqldb.Tx, fenced runs.Fenced) (Call, bool, error) {
			// If-Match may name several tags or *: judge it against the row as it is (the
			// attempt row the fence holds keeps the call from changing), then update at
			// that version.
			var ifMatch any
			if f.IfMatch != nil {
				cur, err := s.byID(ctx, tx, tenantID, attemptID, callID)
				switch {
				case err != nil:
					return Call{}, false, err
				case sameFinish(cur.Call, f):
					return cur.Call, false, nil
				case !f.IfMatch.Matches(cur.Version):
					return Call{}, false, ifmatch.Stale("call " + callID.String())
				}
				ifMatch = tx.Dialect.Version(cur.Version)
			}
			var done Call
			err := tx.GetContext(ctx, &done, s.q.finish, finishArgs(tx.Dialect, tenantID, attemptID, callID, f, fenced.Now, ifMatch)...)
			if err == nil {
				return done, true, s.addCost(ctx, tx, fenced, done)
			}
			if !errors.Is(err, sqldb.ErrNotFound) {
				return Call{}, false, fmt.Errorf("finish call: %w", err)
			}
			// Not finished by this request: missing, finished already (the same way: a
			// repeat, answered as the first was), or not at the expected version. Every
			// writer of the attempt's calls holds the attempt row, so the call cannot change
			// from the update to this read.
			cur, err := s.byID(ctx, tx, tenantID, attemptID, callID)
			switch {
			case err != nil:
				return Call{}, false, err
			case sameFinish(cur.Call, f):
				return cur.Call, false, nil
			default:
				return Call{}, false, apperr.New(api.CodeIllegalTransition, "call %s already finished as %s", callID, cur.Status)
			}
		},
		Repeat: func(ctx context.Context, tx *sqldb.Tx, _ runs.Fenced) (Call, error) {
			cur, err := s.byID(ctx, tx, tenantID, attemptID, callID)
			if err == nil && sameFinish(cur.Call, f) {
				return cur.Call, nil
			}
			return Call{}, runs.ErrNoRepeat
		},
	})
	return c, err
}

// sameFinish says whether the call was finished exactly as f asks: the same status, receipt
// and usage (a different usage for the same call is a conflict, not a repeat).
// finishArgs is the finish's arguments; ifMatch is the expected version (nil: any).
func finishArgs(d sqldb.Dialect, tenantID string, attemptID, callID uuid.UUID, f Finish, now time.Time, ifMatch any) []any {
	u := f.reported()
	return []any{tenantID, attemptID, callID, f.Status, f.ReceiptRef, d.Time(now), ifMatch, textOrNil(d, u.ResponseModel),
		textOrNil(d, u.FinishReasons), u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens,
		u.ReasoningOutputTokens, u.CostMicros}
}

func sameFinish(c Call, f Finish) bool {
	u := f.reported()
	return c.Status == f.Status && same(c.ReceiptRef, f.ReceiptRef) && same(c.ResponseModel, u.ResponseModel) &&
		same(c.FinishReasons, u.FinishReasons) && same(c.InputTokens, u.InputTokens) &&
		same(c.OutputTokens, u.OutputTokens) && same(c.CacheReadInputTokens, u.CacheReadInputTokens) &&
		same(c.CacheCreationInputTokens, u.CacheCreationInputTokens) &&
		same(c.ReasoningOutputTokens, u.ReasoningOutputTokens) && same(c.CostMicros, u.CostMicros)
}

// same says two optional values are both absent or equal.
func same[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// addCost adds a finished call's cost to its project's counter of the day (UTC), in the
// transaction that finished it, so a claim reads the day's total from one row and a
// rolled-back finish counts nothing. Reaching the budget holds the project's claims; the
// moment it is reached is logged once (the finish that crossed it).
func (s *Store) addCost(ctx context.Context, tx *sqldb.Tx, f runs.Fenced, c Call) error {
	if c.CostMicros == nil || *c.CostMicros == 0 {
		return nil
	}
	day := f.Now.UTC().Format(time.DateOnly)
	var total struct {
		CostMicros            int64  `db:"CostMicros"`
		DailyCostBudgetMicros *int64 `db:"DailyCostBudgetMicros"`
	}
	if err := tx.GetContext(ctx, &total, s.q.addCost, f.Attempt.TenantID, f.Attempt.ProjectID, day, *c.CostMicros); err != nil {
		return fmt.Errorf("add the call's cost to its project's day: %w", err)
	}
	if b := total.DailyCostBudgetMicros; b != nil && total.CostMicros >= *b && total.CostMicros-*c.CostMicros < *b && s.held != nil {
		return s.held(ctx, tx, BudgetHeld{TenantID: f.Attempt.TenantID, ProjectID: f.Attempt.ProjectID, Day: day,
			CostMicros: total.CostMicros, BudgetMicros: *b})
	}
	return nil
}

// BudgetHeld is a project's daily cost budget reached by a call's finish.
type BudgetHeld struct {
	TenantID, ProjectID, Day string
	CostMicros, BudgetMicros int64
}

// OnBudgetHeld calls fn inside the finishing transaction when a finish makes its project
// reach its daily cost budget (once a day and budget: the finish that crosses it), so a
// notification of it commits or rolls back with the cost; an error fails the finish.
func (s *Store) OnBudgetHeld(fn func(ctx context.Context, tx *sqldb.Tx, h BudgetHeld) error) {
	s.held = fn
}

// Get reads one call of an attempt (NotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, attemptID, callID uuid.UUID) (Call, error) {
	return seqlog.Get(ctx, s.db, tenantID, "get call", func(tx *sqldb.Tx) (Call, error) {
		st, err := s.byID(ctx, tx, tenantID, attemptID, callID)
		return st.Call, err
	})
}

// Start is the keyset position before the first call (sequences start at 0).
const Start = seqlog.Start

// List returns up to limit calls of the attempt in sequence order, after the sequence
// `after` (Start for the first page). NotFound when the attempt is not the tenant's.
func (s *Store) List(ctx context.Context, tenantID string, attemptID uuid.UUID, after, limit int) ([]Call, error) {
	return seqlog.List[Call](ctx, s.db, s.q.list, "list calls", tenantID, attemptID, after, limit)
}

// ListTx is List inside the caller's transaction, without the attempt check (an attempt's
// timeline merges it with the other child collections).
func ListTx(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, after, limit int) ([]Call, error) {
	return seqlog.ListTx[Call](ctx, tx, queriesFor(tx.Dialect).list, "list calls", tenantID, attemptID, after, limit)
}

// Hooks keep call records in step with the run-lease core: when an attempt ends in any way
// (complete, release, lost to the reaper; a cancelled run's attempt ends by one of these),
// its calls still Started end Abandoned, with EndedAt the time the attempt ended, in the
// same transaction. Add them with (*runs.Service).AddHooks.
func Hooks() runs.Hooks {
	return runs.Hooks{AttemptEnded: abandonOpen}
}

func abandonOpen(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, now time.Time) error {
	if _, err := tx.ExecContext(ctx, queriesFor(tx.Dialect).abandon, tenantID, attemptID, tx.Dialect.Time(now)); err != nil {
		return fmt.Errorf("abandon open calls of ended attempt: %w", err)
	}
	return nil
}

// Totals is what a set of calls used and cost: the sums of what their finishes reported.
type Totals struct {
	Calls                    int64 `db:"Calls"`
	Reported                 int64 `db:"Reported"`
	InputTokens              int64 `db:"InputTokens"`
	OutputTokens             int64 `db:"OutputTokens"`
	CacheReadInputTokens     int64 `db:"CacheReadInputTokens"`
	CacheCreationInputTokens int64 `db:"CacheCreationInputTokens"`
	ReasoningOutputTokens    int64 `db:"ReasoningOutputTokens"`
	CostMicros               int64 `db:"CostMicros"`
}

// Wire returns the totals as the API sends them.
func (t Totals) Wire() api.UsageTotals { return api.UsageTotals(t) }

// AttemptUsage sums the usage of the attempt's calls (NotFound when the attempt is missing
// or another tenant's).
func (s *Store) AttemptUsage(ctx context.Context, tenantID string, attemptID uuid.UUID) (Totals, error) {
	return s.totals(ctx, s.q.attemptUsage, tenantID, attemptID, "attempt")
}

// RunUsage sums the usage of the calls of every attempt of the run (NotFound when the run
// is missing or another tenant's). A continuation is a run of its own: its calls count there.
func (s *Store) RunUsage(ctx context.Context, tenantID string, runID uuid.UUID) (Totals, error) {
	return s.totals(ctx, s.q.runUsage, tenantID, runID, "run")
}

func (s *Store) totals(ctx context.Context, query, tenantID string, id uuid.UUID, what string) (Totals, error) {
	var t Totals
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &t, query, tenantID, id)
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return Totals{}, apperr.New(api.CodeNotFound, "no %s %s", what, id)
	}
	if err != nil {
		return Totals{}, fmt.Errorf("sum %s usage: %w", what, err)
	}
	return t, nil
}
