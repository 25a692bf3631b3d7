package operations

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the bulk routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	ad := tenancy.RoleAdmin
	s.Route(http.MethodPost, "/v1/runs/bulk", web.Op{
		ID: "bulkRuns", Tag: "Runs", Summary: "Cancel or continue many runs",
		Description: "Matches the runs named by runIds, or those the runs list shows with filter, now (at most 100000: " +
			"more is bulk_too_large), and answers 202 with an operation that any replica works through in batches; " +
			"GET /v1/operations/{operationId} shows its progress. cancel ends a queued run cancelled and asks a leased " +
			"run's holder to stop (as POST /v1/runs/{runId}/cancel); continue continues an ended run (as POST " +
			"/v1/runs/{runId}/continue). A run that cannot take the action is skipped and counted by reason. An exact " +
			"repeat of its idempotencyKey, or of a body without one within 10 minutes (a retry), answers 200 with the " +
			"same operation; the same body asked for later is a new operation. dryRun answers 200 " +
			"with the count and stores nothing.",
		Roles: []string{ad}, Body: api.BulkRunsRequest{},
		Example: api.BulkRunsRequest{Action: api.BulkCancel, Filter: &api.BulkFilter{State: api.Ptr(api.RunQueued),
			Tag: api.Ptr("nightly")}, Reason: api.Ptr("bad release")},
		Status: http.StatusAccepted, AlsoStatus: []int{http.StatusOK}, Response: api.Operation{},
		Problems: []api.ProblemCode{api.CodeBulkTooLarge, api.CodeIdempotencyKeyReused},
	}, h.bulk)
	s.Route(http.MethodGet, "/v1/operations/:operationId", web.Op{
		ID: "getOperation", Tag: "Runs", Summary: "Read a bulk operation's progress",
		Roles:  []string{ad},
		Status: http.StatusOK, Response: api.Operation{}, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
}

type handlers struct{ store *Store }

func (h handlers) bulk(c echo.Context) error {
	var req api.BulkRunsRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	p := tenancy.MustPrincipal(c)
	op, created, err := h.store.Create(c.Request().Context(), Caller{TenantID: p.TenantID, KeyID: p.KeyID}, req)
	if err != nil {
		return err
	}
	if op.OperationID == nil {
		return c.JSON(http.StatusOK, op) // a dry run
	}
	if created {
		return c.JSON(http.StatusAccepted, op)
	}
	return c.JSON(http.StatusOK, op)
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathUUID(c, "operationId")
	if err != nil {
		return err
	}
	op, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op)
}
