package history

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the history routes; every role of the tenant may read them.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	s.Route(http.MethodGet, "/v1/attempts", web.Op{
		ID: "listAttempts", Tag: "Attempts", Summary: "List attempts, or follow the change feed",
		Description: "Attempts newest first (filters: runId, agentId, projectId, state, startedFrom inclusive, startedTo " +
			"exclusive, releaseId, kind (the run's), errorCode, hasError (false: the attempts that ended without an error, " +
			"the errorCode insight's \"(none)\" group), and the not* lists (notProjectId, notAgentId, notKind, notReleaseId, " +
			"notErrorCode, each the parameter repeated) that leave out the attempts with one of their values, so an insight's " +
			"\"other\" group lists as it counts); with endedFrom and/or endedTo (inclusive, exclusive) the " +
			"attempts ended in that window, newest end first, as the attempt insights count them (not with runId, " +
			"startedFrom or startedTo; without state the succeeded, failed, cancelled, lost and released ones); or, with " +
			"changedSince=<etag>, the attempts whose version is newer than that ETag, oldest change first (no other " +
			"filter; resume with the last item's etag, or follow nextCursor). Each item carries its etag. Purged attempts " +
			"(retention) never appear.",
		Status: http.StatusOK, Response: api.Page[api.AttemptItem]{}, Query: api.ListAttemptsParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId", web.Op{
		ID: "getAttempt", Tag: "Attempts", Summary: "Read an attempt", Status: http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/timeline", web.Op{
		ID: "getAttemptTimeline", Tag: "Attempts", Summary: "An attempt's timeline",
		Description: "The attempt's checkpoints, calls, decisions and delegations merged by time, then kind (checkpoint, " +
			"call, decision, delegation), then sequence or id; each entry's item is the row itself. An ended attempt's " +
			"timeline ends with an end entry (its id the attempt's) saying how it ended: its state, error, lease and epoch.",
		Status: http.StatusOK, Response: api.Page[api.TimelineEntry]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.timeline)
}

type handlers struct{ store *Store }

// listFilters are the query parameters that changedSince excludes.
var listFilters = []string{"runId", "agentId", "projectId", "state", "startedFrom", "startedTo", "endedFrom", "endedTo",
	"releaseId", "kind", "errorCode", "hasError", "notProjectId", "notAgentId", "notKind", "notReleaseId", "notErrorCode"}

// notLists are the query's not* lists.
func notLists(q api.ListAttemptsParams) NotLists {
	return NotLists{ProjectIDs: q.NotProjectID, AgentIDs: q.NotAgentID, Kinds: q.NotKind, ReleaseIDs: q.NotReleaseID,
		ErrorCodes: q.NotErrorCode}
}

// startedFilters are the query parameters of the started-time listing that a listing of
// ended attempts refuses.
var startedFilters = []string{"runId", "startedFrom", "startedTo"}

// listCursor is the keyset of a listing: StartedAt for newest first, EndedAt for newest
// end first, Version for the change feed (exactly one is set).
type listCursor struct {
	StartedAt *time.Time `json:"t,omitempty"`
	EndedAt   *time.Time `json:"e,omitempty"`
	Version   *uint64    `json:"v,omitempty"`
	ID        uuid.UUID  `json:"i"`
}

// set counts the cursor's keys.
func (c listCursor) set() int {
	n := 0
	for _, ok := range []bool{c.StartedAt != nil, c.EndedAt != nil, c.Version != nil} {
		if ok {
			n++
		}
	}
	return n
}

func badCursor() error {
	return apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "is not a cursor this service made"})
}

func (h handlers) list(c echo.Context) error {
	var q api.ListAttemptsParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	var cur listCursor
	hasCursor, err := web.DecodeCursor(c, &cur)
	if err != nil {
		return err
	}
	if hasCursor && cur.set() != 1 {
		return badCursor()
	}
	if q.ErrorCode != nil && q.HasError != nil && !*q.HasError {
		return apperr.FieldsInvalid(api.FieldError{Field: "hasError", Reason: "must not be false with errorCode"})
	}
	tenant := tenancy.MustPrincipal(c).TenantID
	if q.ChangedSince != nil || (hasCursor && cur.Version != nil) {
		return h.changes(c, tenant, q, hasCursor, cur, limit)
	}
	if q.EndedFrom != nil || q.EndedTo != nil || (hasCursor && cur.EndedAt != nil) {
		return h.ended(c, tenant, q, hasCursor, cur, limit)
	}
	if hasCursor && cur.StartedAt == nil {
		return badCursor()
	}
	f := Filter{Limit: limit + 1, RunID: q.RunID, AgentID: q.AgentID, ProjectID: q.ProjectID, State: q.State,
		ReleaseID: q.ReleaseID, Kind: q.Kind, ErrorCode: q.ErrorCode, HasError: q.HasError, Not: notLists(q)}
	if q.StartedFrom != nil {
		f.StartedFrom = &q.StartedFrom.Time
	}
	if q.StartedTo != nil {
		f.StartedTo = &q.StartedTo.Time
	}
	if f.StartedFrom != nil && f.StartedTo != nil && f.StartedTo.Before(*f.StartedFrom) {
		return apperr.FieldsInvalid(api.FieldError{Field: "startedTo", Reason: "must not be before startedFrom"})
	}
	if hasCursor {
		f.After = &ListCursor{StartedAt: *cur.StartedAt, AttemptID: cur.ID}
	}
	items, err := h.store.List(c.Request().Context(), tenant, f)
	if err != nil {
		return err
	}
	return web.WritePage(c, items, limit, func(last AttemptItem) any {
		at := last.StartedAt
		return listCursor{StartedAt: &at, ID: last.AttemptID}
	}, AttemptItem.Wire)
}

// ended lists the attempts ended in a window, newest end first.
func (h handlers) ended(c echo.Context, tenant string, q api.ListAttemptsParams, hasCursor bool, cur listCursor, limit int) error {
	var bad []api.FieldError
	for _, name := range startedFilters {
		if c.QueryParam(name) != "" {
			bad = append(bad, api.FieldError{Field: name, Reason: "cannot be combined with endedFrom or endedTo"})
		}
	}
	if len(bad) > 0 {
		return apperr.FieldsInvalid(bad...)
	}
	if q.EndedFrom == nil && q.EndedTo == nil {
		return apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "continues a listing with endedFrom or endedTo"})
	}
	if hasCursor && cur.EndedAt == nil {
		return apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "continues a listing without endedFrom or endedTo"})
	}
	f := EndedFilter{Limit: limit + 1, State: q.State, AgentID: q.AgentID, ProjectID: q.ProjectID, ReleaseID: q.ReleaseID,
		Kind: q.Kind, ErrorCode: q.ErrorCode, HasError: q.HasError, Not: notLists(q)}
	if q.EndedFrom != nil {
		f.From = &q.EndedFrom.Time
	}
	if q.EndedTo != nil {
		f.To = &q.EndedTo.Time
	}
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		return apperr.FieldsInvalid(api.FieldError{Field: "endedTo", Reason: "must not be before endedFrom"})
	}
	if hasCursor {
		f.After = &ListCursor{StartedAt: *cur.EndedAt, AttemptID: cur.ID}
	}
	items, err := h.store.ListEnded(c.Request().Context(), tenant, f)
	if err != nil {
		return err
	}
	return web.WritePage(c, items, limit, func(last AttemptItem) any {
		at := *last.EndedAt
		return listCursor{EndedAt: &at, ID: last.AttemptID}
	}, AttemptItem.Wire)
}

func (h handlers) changes(c echo.Context, tenant string, q api.ListAttemptsParams, hasCursor bool, cur listCursor, limit int) error {
	var bad []api.FieldError
	for _, name := range listFilters {
		if c.QueryParam(name) != "" {
			bad = append(bad, api.FieldError{Field: name, Reason: "cannot be combined with changedSince"})
		}
	}
	if len(bad) > 0 {
		return apperr.FieldsInvalid(bad...)
	}
	if hasCursor && cur.Version == nil {
		return apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "continues a listing without changedSince"})
	}
	var after ChangesCursor
	if q.ChangedSince != nil {
		v, ok := parseSince(*q.ChangedSince)
		if !ok {
			return apperr.FieldsInvalid(api.FieldError{Field: "changedSince", Reason: "must be an attempt's ETag (16 hex digits, quoted or not)"})
		}
		after.Version = v
	}
	if hasCursor {
		id := cur.ID
		after = ChangesCursor{Version: sqldb.RowVersion(*cur.Version), AttemptID: &id}
	}
	items, err := h.store.Changes(c.Request().Context(), tenant, after, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, items, limit, func(last AttemptItem) any {
		v := uint64(last.Version)
		return listCursor{Version: &v, ID: last.AttemptID}
	}, AttemptItem.Wire)
}

// parseSince reads an entity tag given as a query parameter, where the quotes are often
// dropped: `"0000000000000a3f"` and `0000000000000a3f` are the same version. A weak tag
// (W/...) names no version and is refused, and so is a version past bigint's range, which
// neither database makes (SQLite would read it as a negative number and list everything).
func parseSince(raw string) (sqldb.RowVersion, bool) {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, `"`) {
		raw = `"` + raw + `"`
	}
	v, ok := sqldb.ParseETag(raw)
	return v, ok && v <= math.MaxInt64
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	a, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
}

type timelineCursor struct {
	At   time.Time `json:"t"`
	Kind int       `json:"k"`
	Seq  int       `json:"s"`
	ID   uuid.UUID `json:"i"`
}

func (h handlers) timeline(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var q api.PageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q)
	var cur timelineCursor
	has, err := web.DecodeCursor(c, &cur)
	if err != nil {
		return err
	}
	var after *TimelineCursor
	if has {
		if !api.TimelineKind(cur.Kind).Valid() {
			return badCursor()
		}
		after = &TimelineCursor{At: cur.At, Kind: cur.Kind, Sequence: cur.Seq, ID: cur.ID}
	}
	entries, err := h.store.Timeline(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, after, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, entries, limit, func(row TimelineEntry) any {
		last := row.Cursor()
		return timelineCursor{At: last.At, Kind: last.Kind, Seq: last.Sequence, ID: last.ID}
	}, TimelineEntry.Wire)
}
