package delegations

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/validate"
	"github.com/ledger-dev/ledger/internal/web"
)

// childExample is the example delegation's child run.
var childExample = func() api.RunSpec {
	c := runs.ExampleRunSpec
	c.Subject, c.Kind, c.AgentID, c.IdempotencyKey = "review:42:tests", "tests", "tester", api.Ptr("review:42:tests")
	return c
}()

// Routes registers the delegation routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/delegations", web.Op{
		ID: "createDelegation", Tag: "Delegations", Summary: "Delegate to a sub-agent",
		Description: "Enqueues the child run (its parent is the attempt's run, its agent child.agentId) and records the " +
			"delegation in one transaction (201 with Location). A repeat of the child's idempotencyKey answers 200 with the " +
			"existing delegation. A child on the parent's subject could never be leased: 422 subject_conflict. Fenced.",
		Roles: []string{tenancy.RoleRuntime}, Body: api.DelegationRequest{},
		Example: api.DelegationRequest{FencingToken: 4, Purpose: "run the test suite on the diff", Child: childExample}, Status: http.StatusCreated,
		AlsoStatus: []int{http.StatusOK}, Response: api.Delegation{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded, api.CodeSubjectConflict,
			api.CodeLoopDepth, api.CodeUnknownProject, api.CodeSequenceConflict, api.CodeIdempotencyKeyReused},
	}, h.create)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/delegations", web.Op{
		ID: "listDelegations", Tag: "Delegations", Summary: "List an attempt's delegations, oldest first", Status: http.StatusOK, Response: api.Page[api.Delegation]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.listByAttempt)
	s.Route(http.MethodGet, "/v1/delegations/:delegationId", web.Op{
		ID: "getDelegation", Tag: "Delegations", Summary: "Read a delegation", Status: http.StatusOK, Response: api.Delegation{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
}

type handlers struct{ store *Store }

func (h handlers) create(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.DelegationRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	if req.Purpose == "" || !validate.Text(req.Purpose, api.MaxPurpose) {
		return apperr.FieldsInvalid(api.FieldError{Field: "purpose",
			Reason: fmt.Sprintf("must be 1 to %d characters of text (no control characters but tab and line breaks)", api.MaxPurpose)})
	}
	p := tenancy.MustPrincipal(c)
	d, created, err := h.store.Create(c.Request().Context(), runs.Caller{TenantID: p.TenantID, KeyID: p.KeyID}, attemptID,
		req.FencingToken, Request{Purpose: req.Purpose, Child: runs.SpecOf(req.Child)})
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "delegations", d.DelegationID.String()), d.Version, d.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, d.Version, d.Wire())
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathUUID(c, "delegationId")
	if err != nil {
		return err
	}
	d, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, d.Version, d.Wire())
}

type cursor struct {
	CreatedAt    time.Time `json:"t"`
	DelegationID uuid.UUID `json:"d"`
}

func (h handlers) listByAttempt(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var q api.PageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q)
	var (
		cur cursor
		pos *Position
	)
	if ok, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	} else if ok {
		pos = &Position{CreatedAt: cur.CreatedAt, DelegationID: cur.DelegationID}
	}
	ds, err := h.store.ListByAttempt(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, pos, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, ds, limit, func(last Delegation) any {
		return cursor{CreatedAt: last.CreatedAt, DelegationID: last.DelegationID}
	}, Delegation.Wire)
}
