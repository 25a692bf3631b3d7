// Package history answers the tenant's questions about what ran (DESIGN.md section 5,
// "History"): attempts newest first with filters, a change feed of attempts in rowversion
// order, one attempt, and an attempt's timeline of checkpoints, calls, decisions and
// delegations merged by time. It only reads, and reads the ledger's tables with its own
// statements, so it depends on no other ledger package's store.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Store reads history.
type Store struct {
	db *sqldb.DB
	q  *queries
}

// NewStore returns the history reader of db.
func NewStore(db *sqldb.DB) *Store { return &Store{db: db, q: queriesFor(db.Dialect)} }

// AttemptItem is an attempt in a listing, with its entity tag: a change-feed client passes the
// last item's etag as the next changedSince.
type AttemptItem struct {
	attempts.Attempt
	ETag string `db:"-"`
}

// Wire returns the item as the API sends it.
func (i AttemptItem) Wire() api.AttemptItem {
	return api.AttemptItem{Attempt: i.Attempt.Wire(), ETag: i.ETag}
}

// ListCursor is a position in a newest-first listing: the last attempt returned (in a
// listing of ended attempts, StartedAt holds its EndedAt).
type ListCursor struct {
	StartedAt time.Time
	AttemptID uuid.UUID
}

// key is the cursor as sqldb.KeyRange takes it (nil: the first page).
func (c *ListCursor) key() (*time.Time, uuid.UUID) {
	if c == nil {
		return nil, uuid.Nil
	}
	return &c.StartedAt, c.AttemptID
}

// Filter narrows an attempt listing. Nil fields do not filter.
type Filter struct {
	RunID     *uuid.UUID
	AgentID   *string
	ProjectID *string
	State     *api.AttemptState
	// StartedFrom is inclusive, StartedTo exclusive.
	StartedFrom *time.Time
	StartedTo   *time.Time
	// ReleaseID, Kind (the run's) and ErrorCode narrow as the attempt insights group.
	ReleaseID *string
	Kind      *string
	ErrorCode *string
	// HasError true keeps the attempts that ended with an error, false those without (the
	// errorCode insight's "(none)" group).
	HasError *bool
	// Not leaves out the attempts of the groups an insight names (its "other" group).
	Not NotLists
	// After continues a listing after this attempt.
	After *ListCursor
	Limit int
}

// EndedFilter narrows a listing of ended attempts (ListEnded). Nil fields do not filter.
type EndedFilter struct {
	// State nil lists the states the attempts-ended insight counts (succeeded, failed,
	// cancelled, lost, released); a parked attempt is listed only when State asks for it.
	State     *api.AttemptState
	AgentID   *string
	ProjectID *string
	ReleaseID *string
	Kind      *string
	ErrorCode *string
	HasError  *bool
	// Not leaves out the attempts of the groups an insight names (its "other" group).
	Not NotLists
	// From is inclusive, To exclusive.
	From, To *time.Time
	// After continues a listing after this attempt (its EndedAt as At).
	After *ListCursor
	Limit int
}

// NotLists leave out the attempts with one of their values: of these projects, agents,
// run kinds, releases or error codes (an attempt without an error is kept).
type NotLists struct {
	ProjectIDs, AgentIDs, Kinds, ReleaseIDs, ErrorCodes []string
}

// args are the lists as the statements' five arguments.
func (n NotLists) args(d sqldb.Dialect) []any {
	return []any{sqldb.JSONList(d, n.ProjectIDs), sqldb.JSONList(d, n.AgentIDs), sqldb.JSONList(d, n.Kinds),
		sqldb.JSONList(d, n.ReleaseIDs), sqldb.JSONList(d, n.ErrorCodes)}
}

// stateArg is a state filter as a statement's argument: NULL for any state.
func stateArg(st *api.AttemptState) any {
	if st == nil {
		return nil
	}
	return int(*st)
}

// ListEnded returns up to f.Limit of the tenant's attempts that ended in f's window, newest
// end first (EndedAt, then AttemptId, descending): the rows an attempts insight counts.
func (s *Store) ListEnded(ctx context.Context, tenantID string, f EndedFilter) ([]AttemptItem, error) {
	after, afterID := f.After.key()
	from, at, id := sqldb.KeyRange(f.From, f.To, after, afterID)
	state := stateArg(f.State)
	var items []AttemptItem
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		d := tx.Dialect
		return tx.SelectContext(ctx, &items, s.q.listByEnded, append([]any{tenantID, state, f.AgentID, f.ProjectID,
			d.Time(from), d.Time(at), id, f.Limit, f.ReleaseID, f.Kind, f.ErrorCode, sqldb.OptionalBit(f.HasError)}, f.Not.args(d)...)...)
	})
	if err != nil {
		return nil, fmt.Errorf("list ended attempts: %w", err)
	}
	return withETags(items), nil
}

// List returns up to f.Limit of the tenant's attempts, newest first (StartedAt, then
// AttemptId, descending).
func (s *Store) List(ctx context.Context, tenantID string, f Filter) ([]AttemptItem, error) {
	after, afterID := f.After.key()
	from, at, id := sqldb.KeyRange(f.StartedFrom, f.StartedTo, after, afterID)
	state := stateArg(f.State)
	var items []AttemptItem
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		d := tx.Dialect
		if f.RunID != nil {
			return tx.SelectContext(ctx, &items, s.q.listByRun, append([]any{tenantID, *f.RunID, state, f.AgentID,
				f.ProjectID, d.Time(from), d.Time(at), id, f.Limit, f.ReleaseID, f.Kind, f.ErrorCode, sqldb.OptionalBit(f.HasError)},
				f.Not.args(d)...)...)
		}
		return tx.SelectContext(ctx, &items, s.q.listByTenant, append([]any{tenantID, state, f.AgentID, f.ProjectID,
			d.Time(from), d.Time(at), id, f.Limit, f.ReleaseID, f.Kind, f.ErrorCode, sqldb.OptionalBit(f.HasError)}, f.Not.args(d)...)...)
	})
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return withETags(items), nil
}

// ChangesCursor is a position in the change feed: the last attempt returned. A feed that
// starts from an entity tag has the tag's version and no attempt.
type ChangesCursor struct {
	Version   sqldb.RowVersion
	AttemptID *uuid.UUID
}

// Changes returns up to limit of the tenant's attempts whose Version is greater than the
// cursor's (or equal with a greater AttemptId), in Version order. Rows still being written
// are left for a later call (SQL Server: below MIN_ACTIVE_ROWVERSION), so a client that
// follows the feed never skips a row. Purged attempts are gone and never appear.
func (s *Store) Changes(ctx context.Context, tenantID string, after ChangesCursor, limit int) ([]AttemptItem, error) {
	id := sqldb.KeyMaxID // strictly after the version
	if after.AttemptID != nil {
		id = *after.AttemptID
	}
	var items []AttemptItem
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var ceiling sqldb.RowVersion
		if err := tx.GetContext(ctx, &ceiling, s.q.changesCap); err != nil {
			return fmt.Errorf("read the committed rowversion: %w", err)
		}
		return tx.SelectContext(ctx, &items, s.q.changes, tenantID, tx.Dialect.Version(after.Version), id,
			tx.Dialect.Version(ceiling), limit)
	})
	if err != nil {
		return nil, fmt.Errorf("list changed attempts: %w", err)
	}
	return withETags(items), nil
}

func withETags(items []AttemptItem) []AttemptItem {
	for i := range items {
		items[i].ETag = items[i].Version.ETag()
	}
	return items
}

// Get reads one attempt of the tenant (api.CodeNotFound when missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID string, id uuid.UUID) (attempts.Attempt, error) {
	var a attempts.Attempt
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		a, err = attempts.Get(ctx, tx, tenantID, id)
		return err
	})
	return a, err
}

// TimelineEntry is one line of an attempt's timeline. Item is the row itself: a Checkpoint, Call,
// Decision or Delegation, or how the attempt ended (the last entry of an ended attempt).
type TimelineEntry struct {
	Kind     api.TimelineKind
	At       time.Time
	Sequence *int
	ID       uuid.UUID
	Item     interface{ WireJSON() ([]byte, error) }
}

// Wire returns the entry as the API sends it.
func (e TimelineEntry) Wire() api.TimelineEntry {
	w := api.TimelineEntry{Kind: e.Kind, At: api.NewTime(e.At), ID: e.ID}
	if e.Sequence != nil {
		seq := int32(*e.Sequence)
		w.Sequence = &seq
	}
	// The rows are the service's own, so they always marshal.
	w.Item, _ = e.Item.WireJSON()
	return w
}

// TimelineCursor is a position in a timeline: the last entry returned.
type TimelineCursor struct {
	At       time.Time
	Kind     int
	Sequence int
	ID       uuid.UUID
}

// Cursor returns the position of e.
func (e TimelineEntry) Cursor() TimelineCursor {
	c := TimelineCursor{At: e.At, Kind: int(e.Kind), ID: e.ID}
	if e.Sequence != nil {
		c.Sequence = *e.Sequence
	}
	return c
}

// entryKey is one row of the timeline statement, whose Kind literals (0..3) follow
// api.TimelineKind's order, the order a timeline sorts entries that share a time.
type entryKey struct {
	Kind api.TimelineKind `db:"Kind"`
	At   sqldb.Time       `db:"At"`
	Seq  int              `db:"Seq"`
	ID   uuid.UUID        `db:"Id"`
}

// Timeline returns up to limit entries of an attempt's timeline after the cursor (nil: from
// the start), ordered by time, then kind (checkpoint, call, decision, delegation), then
// sequence (checkpoints, calls) or id. api.CodeNotFound when the attempt is missing or
// another tenant's.
func (s *Store) Timeline(ctx context.Context, tenantID string, attemptID uuid.UUID, after *TimelineCursor, limit int) ([]TimelineEntry, error) {
	cur := TimelineCursor{At: sqldb.KeyMinTime, Kind: -1}
	if after != nil {
		cur = *after
	}
	var out []TimelineEntry
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		a, err := attempts.Get(ctx, tx, tenantID, attemptID)
		if err != nil {
			return err
		}
		var keys []entryKey
		if err := tx.SelectContext(ctx, &keys, s.q.timeline, tenantID, attemptID, tx.Dialect.Time(cur.At), cur.Kind,
			cur.Sequence, cur.ID, limit); err != nil {
			return fmt.Errorf("read timeline: %w", err)
		}
		items, err := s.entryRows(ctx, tx, tenantID, keys)
		if err != nil {
			return err
		}
		out = make([]TimelineEntry, 0, len(keys))
		for _, k := range keys {
			item, ok := items[k.ID]
			if !ok {
				continue // purged between the two reads
			}
			e := TimelineEntry{Kind: k.Kind, At: k.At.Time, ID: k.ID, Item: item}
			if k.Kind == api.TimelineCheckpoint || k.Kind == api.TimelineCall {
				seq := k.Seq
				e.Sequence = &seq
			}
			out = append(out, e)
		}
		// Past the last row, an ended attempt's timeline ends with how it ended; a cursor at
		// that entry has nothing after it. Its time is the attempt's end, or the last row's when
		// a row carries a later clock (kept in order for the cursor).
		if len(keys) < limit && a.EndedAt != nil && cur.Kind != int(api.TimelineEnd) {
			at := *a.EndedAt
			if n := len(out); n > 0 && out[n-1].At.After(at) {
				at = out[n-1].At
			}
			if cur.At.After(at) {
				at = cur.At
			}
			out = append(out, TimelineEntry{Kind: api.TimelineEnd, At: at, ID: a.AttemptID, Item: attemptEnd{a}})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("attempt timeline: %w", err)
	}
	return out, nil
}

// attemptEnd is the end entry's item.
type attemptEnd struct{ a attempts.Attempt }

// WireJSON marshals the entry as the API sends it.
func (e attemptEnd) WireJSON() ([]byte, error) {
	a := e.a
	return json.Marshal(api.AttemptEnd{State: a.State, EndedAt: api.NewTime(*a.EndedAt), LeaseID: a.LeaseID,
		FencingToken: a.FencingToken, OutcomeHash: a.OutcomeHash, Error: a.Failure().Wire(),
		CancellationObservedAt: api.TimeOf(a.CancellationObservedAt)})
}

// entryRows reads the rows behind a page of keys, at most one statement per kind.
func (s *Store) entryRows(ctx context.Context, tx *sqldb.Tx, tenantID string, keys []entryKey) (map[uuid.UUID]wireItem, error) {
	var ids [4][]string
	for _, k := range keys {
		ids[k.Kind] = append(ids[k.Kind], k.ID.String())
	}
	out := make(map[uuid.UUID]wireItem, len(keys))
	if err := fetch[Checkpoint](ctx, tx, s.q.checkpoints, tenantID, ids[api.TimelineCheckpoint], out, func(r Checkpoint) uuid.UUID { return r.CheckpointID }); err != nil {
		return nil, err
	}
	if err := fetch[Call](ctx, tx, s.q.calls, tenantID, ids[api.TimelineCall], out, func(r Call) uuid.UUID { return r.CallID }); err != nil {
		return nil, err
	}
	// Decisions are read by their own package, so the timeline and GET /v1/decisions/{id}
	// share one read rule (a pending decision past its ExpiresAt is expired).
	decisionIDs := make([]uuid.UUID, 0, len(ids[api.TimelineDecision]))
	for _, id := range ids[api.TimelineDecision] {
		decisionIDs = append(decisionIDs, uuid.MustParse(id))
	}
	ds, err := decisions.ByIDs(ctx, tx, tenantID, decisionIDs)
	if err != nil {
		return nil, fmt.Errorf("read timeline entries: %w", err)
	}
	for _, d := range ds {
		out[d.DecisionID] = Decision{d}
	}
	if err := fetch[Delegation](ctx, tx, s.q.delegations, tenantID, ids[api.TimelineDelegation], out, func(r Delegation) uuid.UUID { return r.DelegationID }); err != nil {
		return nil, err
	}
	return out, nil
}

// wireItem is a timeline row that marshals as the API sends it.
type wireItem = interface{ WireJSON() ([]byte, error) }

func fetch[T wireItem](ctx context.Context, tx *sqldb.Tx, query, tenantID string, ids []string, out map[uuid.UUID]wireItem, key func(T) uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	var rows []T
	if err := tx.SelectContext(ctx, &rows, query, tenantID, tx.Dialect.JSON(string(list))); err != nil {
		return fmt.Errorf("read timeline entries: %w", err)
	}
	for _, r := range rows {
		out[key(r)] = r
	}
	return nil
}

// Timeline rows: each marshals as the API sends it (WireJSON).

// Checkpoint, Call and Delegation are the rows their own packages read and write.
type (
	Checkpoint struct{ checkpoints.Checkpoint }
	Call       struct{ calls.Call }
	Delegation struct{ delegations.Delegation }
)

// WireJSON marshals the row as the API sends it.
func (r Checkpoint) WireJSON() ([]byte, error) { return json.Marshal(r.Wire()) }

// WireJSON marshals the row as the API sends it.
func (r Call) WireJSON() ([]byte, error) { return json.Marshal(r.Wire()) }

// WireJSON marshals the row as the API sends it.
func (r Delegation) WireJSON() ([]byte, error) { return json.Marshal(r.Wire()) }

// Decision is a timeline's decision entry: the decision as GET /v1/decisions/{id} reads it
// (one read rule: a pending decision past its ExpiresAt is expired, in both places).
type Decision struct{ decisions.Decision }

// WireJSON marshals the row as the API sends it.
func (r Decision) WireJSON() ([]byte, error) { return json.Marshal(r.Wire()) }
