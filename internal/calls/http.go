package calls

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the call routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	rt := tenancy.RoleRuntime
	fenced := []api.ProblemCode{api.CodeNotFound, api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/calls", web.Op{
		ID: "recordCall", Tag: "Calls", Summary: "Record a started call under the lease",
		Description: "Records a call as it starts (201 with Location and ETag). An exact repeat of a sequence answers 200 with " +
			"the stored call, another requestHash for the sequence is 409 sequence_conflict. Fenced.",
		Roles: []string{rt}, Body: api.CallRequest{},
		Example: api.CallRequest{FencingToken: 4, Sequence: api.Ptr(int32(0)), Kind: api.Ptr(api.CallTool),
			Target: "tool://github/get-diff", RequestHash: "sha256:7a1e"}, Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated},
		Response: api.Call{}, ETag: true, Problems: append([]api.ProblemCode{api.CodeSequenceConflict}, fenced...),
	}, h.record)
	s.Route(http.MethodPatch, "/v1/attempts/:attemptId/calls/:callId", web.Op{
		ID: "finishCall", Tag: "Calls", Summary: "Finish a call under the lease",
		Description: "Sets the call's status, receiptRef and endedAt once. A repeat of the same finish answers 200 as stored, " +
			"another finish of a finished call is 409 illegal_transition. If-Match is honoured when sent (412 when stale). Fenced.",
		Roles: []string{rt}, Body: api.FinishCallRequest{},
		Example: api.FinishCallRequest{FencingToken: 4, Status: api.FinishSucceeded, ReceiptRef: api.Ptr("s3://acme-receipts/42/0")}, Status: http.StatusOK, Response: api.Call{}, ETag: true, IfMatch: ifmatch.Optional,
		Problems: append([]api.ProblemCode{api.CodeIllegalTransition}, fenced...),
	}, h.finish)
	s.Route(http.MethodGet, "/v1/calls", web.Op{
		ID: "listTenantCalls", Tag: "Calls", Summary: "List the tenant's calls, newest first",
		Description: "The tenant's calls started in a window (startedFrom inclusive, startedTo exclusive), newest start " +
			"first, as the calls insight counts them; or, with endedFrom/endedTo, the calls finished in one, newest end " +
			"first, as the usage insight counts them (with reportedUsage=true). Filters: target, model, hasModel (false: the " +
			"calls that named no model), notTarget and notModel (each the parameter repeated: the calls of none of these, " +
			"so an insight's \"other\" row lists as it counts; a call without a model is kept), reportedUsage, and " +
			"the attempt's projectId, agentId, releaseId and its run's kind. Each item carries its etag. A cursor " +
			"continues only a listing by the same time.",
		Status: http.StatusOK, Response: api.Page[api.CallItem]{}, Query: api.ListTenantCallsParams{},
	}, h.listTenant)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/calls", web.Op{
		ID: "listCalls", Tag: "Calls", Summary: "List an attempt's calls in sequence order", Status: http.StatusOK, Response: api.Page[api.Call]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.list)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/usage", web.Op{
		ID: "getAttemptUsage", Tag: "Calls", Summary: "What an attempt's calls used and cost",
		Description: "Sums the usage (tokens by kind) and cost that the attempt's calls reported when they finished.",
		Status:      http.StatusOK, Response: api.UsageTotals{}, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.attemptUsage)
	s.Route(http.MethodGet, "/v1/runs/:runId/usage", web.Op{
		ID: "getRunUsage", Tag: "Calls", Summary: "What a run's calls used and cost",
		Description: "Sums the usage (tokens by kind) and cost that the calls of every attempt of the run reported when " +
			"they finished. A continuation is a run of its own.",
		Status: http.StatusOK, Response: api.UsageTotals{}, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.runUsage)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/calls/:callId", web.Op{
		ID: "getCall", Tag: "Calls", Summary: "Read one call", Status: http.StatusOK, Response: api.Call{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
}

type handlers struct{ store *Store }

func location(c Call) string {
	return web.Path("v1", "attempts", c.AttemptID.String(), "calls", c.CallID.String())
}

func (h handlers) record(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.CallRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	n := Draft{Sequence: int(*req.Sequence), Kind: *req.Kind, Target: req.Target, RequestHash: req.RequestHash,
		PolicyDecisionID: req.PolicyDecisionID, Model: req.Model, Provider: req.Provider, Operation: req.Operation}
	call, created, err := h.store.Record(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, req.FencingToken, n)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, location(call), call.Version, call.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, call.Version, call.Wire())
}

func callPath(c echo.Context) (attemptID, callID uuid.UUID, err error) {
	if attemptID, err = web.PathUUID(c, "attemptId"); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	callID, err = web.PathUUID(c, "callId")
	return attemptID, callID, err
}

func (h handlers) finish(c echo.Context) error {
	attemptID, callID, err := callPath(c)
	if err != nil {
		return err
	}
	var req api.FinishCallRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c)
	if err != nil {
		return err
	}
	f := Finish{Status: api.CallStatus(req.Status), ReceiptRef: req.ReceiptRef, IfMatch: ifMatch, Usage: req.Usage,
		ResponseModel: req.ResponseModel, FinishReasons: req.FinishReasons, CostMicros: req.CostMicros}
	call, err := h.store.FinishCall(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, callID, req.FencingToken, f)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, call.Version, call.Wire())
}

func (h handlers) get(c echo.Context) error {
	attemptID, callID, err := callPath(c)
	if err != nil {
		return err
	}
	call, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, callID)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, call.Version, call.Wire())
}

func (h handlers) list(c echo.Context) error {
	return web.ListBySequence(c, Start, func(x Call) int { return x.Sequence }, Call.Wire,
		func(ctx context.Context, attemptID uuid.UUID, after, limit int) ([]Call, error) {
			return h.store.List(ctx, tenancy.MustPrincipal(c).TenantID, attemptID, after, limit)
		})
}

func (h handlers) attemptUsage(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	t, err := h.store.AttemptUsage(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t.Wire())
}

func (h handlers) runUsage(c echo.Context) error {
	runID, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	t, err := h.store.RunUsage(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, runID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t.Wire())
}
