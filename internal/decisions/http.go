package decisions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/validate"
	"github.com/ledger-dev/ledger/internal/waits"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the decision routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	rt, ad := tenancy.RoleRuntime, tenancy.RoleAdmin
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/decisions", web.Op{
		ID: "requestDecision", Tag: "Decisions", Summary: "Ask for a decision under the lease",
		Description: "Asks a person to decide (201 with Location); the attempt's phase becomes awaiting_decision until the " +
			"answer (or expiry) restores it. expiresInSeconds closes it as expired that long after. The decision belongs to the " +
			"run: it stays pending when the attempt ends released, lost or parked, and is cancelled when the run ends. " +
			"idempotencyKey names it once per run: the same request under the same key (from any attempt of the run) answers " +
			"200 with the existing decision, pending or closed; another request under it is 409 idempotency_key_reused. " +
			"Fenced. An attempt may have at most --max-pending-decisions (default 100) pending at once: past it 409 decision_limit.",
		Roles: []string{rt}, Body: api.DecisionRequest{},
		Example: api.DecisionRequest{FencingToken: 4, Kind: api.Ptr(api.DecisionChoice), Options: []byte(`["merge","request changes"]`),
			Recommendation: api.Ptr("merge"), ExpiresInSeconds: api.Ptr(86400), IdempotencyKey: api.Ptr("step:review:merge")},
		Status: http.StatusCreated, AlsoStatus: []int{http.StatusOK}, Response: api.Decision{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded, api.CodeDecisionLimit,
			api.CodeIdempotencyKeyReused},
	}, h.create)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/decisions", web.Op{
		ID: "listAttemptDecisions", Tag: "Decisions", Summary: "List an attempt's decisions, oldest first", Status: http.StatusOK, Response: api.Page[api.DecisionItem]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.listByAttempt)
	s.Route(http.MethodGet, "/v1/runs/:runId/decisions", web.Op{
		ID: "listRunDecisions", Tag: "Decisions", Summary: "List a run's decisions across its attempts and continuations, oldest first",
		Description: "The decisions every attempt of the run asked, and those of the runs it continues and that continue it " +
			"(up to 8 each way along the chain).",
		Status: http.StatusOK, Response: api.Page[api.DecisionItem]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.listByRun)
	s.Route(http.MethodGet, "/v1/decisions", web.Op{
		ID: "listDecisions", Tag: "Decisions", Summary: "The decision inbox",
		Description: "The tenant's decisions: pending ones first, then the others, each oldest request first (a pending " +
			"decision past its expiry is listed as expired); each item names its run, project, subject and agent. Filters: " +
			"status, projectId, and what the decisions insight counts by: kind, requestedFrom (inclusive) and requestedTo " +
			"(exclusive), the attempt's agentId and releaseId, and its run's kind (runKind).",
		Roles: []string{ad}, Status: http.StatusOK, Response: api.Page[api.DecisionItem]{},
		Query: api.ListDecisionsParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/decisions/:decisionId", web.Op{
		ID: "getDecision", Tag: "Decisions", Summary: "Read a decision",
		Description: "The holder reads the answer here. With waitSeconds the answer waits while the decision is pending (until " +
			"it closes, or that long, answering with the decision as it then is); past the tenant's cap of waiting reads it " +
			"answers at once.",
		Query:  api.WaitParams{},
		Status: http.StatusOK, Response: api.Decision{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodPost, "/v1/decisions/:decisionId/answer", web.Op{
		ID: "answerDecision", Tag: "Decisions", Summary: "Answer a pending decision",
		Description: "Approves or rejects a pending decision with an optional answer (any JSON). A choice decision is answered " +
			"with one of its options, an input decision approved with an answer (400 naming answer otherwise). If-Match " +
			"required; 409 decision_closed once it is no longer pending.",
		Roles: []string{ad}, Body: api.AnswerDecisionRequest{},
		Example: api.AnswerDecisionRequest{Status: api.AnswerApproved, Answer: []byte(`"merge"`)},
		Status:  http.StatusOK, Response: api.Decision{}, ETag: true,
		IfMatch:  AnswerIfMatch,
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeDecisionClosed},
	}, h.answer)
}

type handlers struct{ store *Store }

func (h handlers) create(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.DecisionRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	r, err := requestOf(req)
	if err != nil {
		return err
	}
	d, created, err := h.store.Ask(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, req.FencingToken, r)
	if err != nil {
		return err
	}
	if !created {
		return web.JSONWithETag(c, http.StatusOK, d.Version, d.Wire())
	}
	return web.Created(c, web.Path("v1", "decisions", d.DecisionID.String()), d.Version, d.Wire())
}

// requestOf checks what the validator cannot (the recommendation's UTF-16 length and
// characters, JSON) and converts. The proposal hash's bound is its ident tag's.
func requestOf(req api.DecisionRequest) (Request, error) {
	var bad []api.FieldError
	if req.Recommendation != nil && !validate.Text(*req.Recommendation, api.MaxRecommendation) {
		bad = append(bad, api.FieldError{Field: "recommendation", Reason: fmt.Sprintf(
			"must be at most %d characters of text (no control characters but tab and line breaks)", api.MaxRecommendation)})
	}
	options, ok := compactJSON(req.Options)
	if !ok {
		bad = append(bad, api.FieldError{Field: "options", Reason: "must be JSON in valid UTF-8"})
	}
	if len(bad) > 0 {
		return Request{}, apperr.FieldsInvalid(bad...)
	}
	r := Request{Kind: *req.Kind, ProposalHash: req.ProposalHash, Options: options, Recommendation: req.Recommendation,
		IdempotencyKey: req.IdempotencyKey}
	if req.ExpiresInSeconds != nil {
		r.ExpiresIn = time.Duration(*req.ExpiresInSeconds) * time.Second
	}
	return r, nil
}

func (h handlers) get(c echo.Context) error {
	return waits.Get(c, "decisionId", h.store.WaitClosed, func(d Decision) (sqldb.RowVersion, any) { return d.Version, d.Wire() })
}

func (h handlers) answer(c echo.Context) error {
	id, err := web.PathUUID(c, "decisionId")
	if err != nil {
		return err
	}
	var req api.AnswerDecisionRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c)
	if err != nil {
		return err
	}
	p := tenancy.MustPrincipal(c)
	a, err := AnswerOf(req, p.KeyID, ifMatch)
	if err != nil {
		return err
	}
	d, err := h.store.Answer(c.Request().Context(), p.TenantID, id, a)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, d.Version, d.Wire())
}

// AnswerOf is the answer a decoded and validated request gives, from the API or the
// console: its answer document compacted, refused unless valid UTF-8.
func AnswerOf(req api.AnswerDecisionRequest, keyID string, ifMatch sqldb.VersionMatcher) (Answer, error) {
	answer, ok := compactJSON(req.Answer)
	if !ok {
		return Answer{}, apperr.FieldsInvalid(api.FieldError{Field: "answer", Reason: "must be JSON in valid UTF-8"})
	}
	return Answer{Status: api.DecisionStatus(req.Status), Answer: answer, KeyID: keyID, IfMatch: ifMatch, ApprovalID: req.ApprovalID}, nil
}

// cursor is a keyset position of a decision listing (Rank only in the pending-first inbox).
type cursor struct {
	Rank        int       `json:"r,omitempty"`
	RequestedAt time.Time `json:"t"`
	DecisionID  uuid.UUID `json:"d"`
}

func page(c echo.Context, limit int, ds []Decision) error {
	return web.WritePage(c, ds, limit, func(last Decision) any {
		return cursor{Rank: Rank(last), RequestedAt: last.RequestedAt, DecisionID: last.DecisionID}
	}, Decision.Item)
}

func after(c echo.Context) (*Position, error) {
	var cur cursor
	ok, err := web.DecodeCursor(c, &cur)
	if err != nil || !ok {
		return nil, err
	}
	if cur.Rank != 0 && cur.Rank != 1 {
		return nil, apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "is not a cursor of this listing"})
	}
	return &Position{Rank: cur.Rank, RequestedAt: cur.RequestedAt, DecisionID: cur.DecisionID}, nil
}

func (h handlers) list(c echo.Context) error {
	var q api.ListDecisionsParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	f := ListFilter{Limit: limit + 1}
	f.Status = q.Status
	f.ProjectID = q.ProjectID
	f.Kind, f.AgentID, f.ReleaseID, f.RunKind = q.Kind, q.AgentID, q.ReleaseID, q.RunKind
	if q.RequestedFrom != nil {
		f.RequestedFrom = &q.RequestedFrom.Time
	}
	if q.RequestedTo != nil {
		f.RequestedTo = &q.RequestedTo.Time
	}
	if f.RequestedFrom != nil && f.RequestedTo != nil && f.RequestedTo.Before(*f.RequestedFrom) {
		return apperr.FieldsInvalid(api.FieldError{Field: "requestedTo", Reason: "must not be before requestedFrom"})
	}
	var err error
	if f.After, err = after(c); err != nil {
		return err
	}
	ds, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return page(c, limit, ds)
}

func (h handlers) listByAttempt(c echo.Context) error {
	return h.listUnder(c, "attemptId", h.store.ListByAttempt)
}

func (h handlers) listByRun(c echo.Context) error {
	return h.listUnder(c, "runId", h.store.ListByRun)
}

// listUnder answers a page of the decisions under the entity its path names (an attempt or
// a run), through that entity's listing.
func (h handlers) listUnder(c echo.Context, param string,
	list func(ctx context.Context, tenantID string, id uuid.UUID, after *Position, limit int) ([]Decision, error)) error {
	id, err := web.PathUUID(c, param)
	if err != nil {
		return err
	}
	var q api.PageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q)
	pos, err := after(c)
	if err != nil {
		return err
	}
	ds, err := list(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, pos, limit+1)
	if err != nil {
		return err
	}
	return page(c, limit, ds)
}

// compactJSON returns a JSON value as stored: nil for absent or null, else compacted. It
// refuses invalid UTF-8, which SQL Server would store replaced and SQLite as sent.
func compactJSON(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if !utf8.Valid(raw) {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}
