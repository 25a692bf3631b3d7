package runs

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

var exampleDecision = uuid.MustParse("3d9a1f0e-5b7c-4e2a-9f1d-8c6b5a4e3d2c")

// parkRoutes registers POST /v1/attempts/{attemptId}/park.
func parkRoutes(s *web.Server, h handlers) {
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/park", web.Op{
		ID: "parkAttempt", Tag: "Attempts", Summary: "Park the run until decisions close, children end or a time",
		Description: "Ends the attempt parked (no attempt is spent) and queues the run again, waiting: no claim is offered it " +
			"until every named decision is closed (answered, expired or cancelled) and every named child run has ended, or " +
			"until dueAt (with conditions, a timeout). It keeps its subject's place and holds no lease and no budget. The " +
			"transaction that closes its last condition makes it due at once; a condition already met counts as closed. " +
			"Names at least one of decisionIds, childRunIds, dueAt. A decision that is not this run's is 422 unknown_decision, " +
			"a run that is not its child 422 unknown_run. With a cancel pending the run ends cancelled, past its deadline " +
			"deadline. Fenced; a repeat answers the parked attempt.",
		Roles: []string{tenancy.RoleRuntime}, Body: api.ParkAttemptRequest{},
		Example: api.ParkAttemptRequest{FencingToken: 4, DecisionIDs: []uuid.UUID{exampleDecision}},
		Status:  http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: append([]api.ProblemCode{api.CodeUnknownDecision, api.CodeUnknownRun}, fenced...),
	}, h.park)
}

func (h handlers) park(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.ParkAttemptRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	p := Park{DecisionIDs: req.DecisionIDs, ChildRunIDs: req.ChildRunIDs}
	if req.DueAt != nil {
		t := req.DueAt.UTC()
		p.DueAt = &t
	}
	a, err := h.svc.Park(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken, p)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
}
