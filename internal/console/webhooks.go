package console

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

// recentFailures bounds the failed deliveries the webhooks page shows.
const recentFailures = 20

type webhooksView struct {
	Endpoints []webhooks.Endpoint
	Failures  []webhooks.Delivery
	Message   string
	Error     string
}

// webhooksPage lists the tenant's endpoints (at most webhooks.MaxEndpoints) and the most
// recent failed deliveries, each with a redeliver button.
func (c *console) webhooksPage(ctx echo.Context) error {
	msg := ""
	if id := ctx.QueryParam("redelivered"); id != "" {
		msg = "Delivery " + id + " is pending again: it is sent within seconds, with the same webhook-id."
	}
	return c.renderWebhooks(ctx, http.StatusOK, msg, "")
}

func (c *console) renderWebhooks(ctx echo.Context, status int, msg, problem string) error {
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	es, err := c.Webhooks.List(rctx, tenant, "", webhooks.MaxEndpoints)
	if err != nil {
		return err
	}
	failed := api.DeliveryFailed
	fs, err := c.Webhooks.Deliveries(rctx, tenant, webhooks.DeliveryFilter{Status: &failed, Limit: recentFailures})
	if err != nil {
		return err
	}
	v := webhooksView{Endpoints: es, Failures: fs, Message: msg, Error: problem}
	return c.render(ctx, status, "webhooks", page{Title: "Webhooks", Nav: "webhooks", Data: v})
}

// redeliver makes a failed (or delivered) delivery pending again, as POST
// /v1/webhook-deliveries/{id}/redeliver does.
func (c *console) redeliver(ctx echo.Context) error {
	id, err := uuid.Parse(ctx.Param("deliveryId"))
	if err != nil {
		return c.notFound(ctx)
	}
	_, err = c.Webhooks.Redeliver(ctx.Request().Context(), tenantOf(ctx), id)
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/webhooks?redelivered="+id.String())
	case apperr.Is(err, api.CodeIllegalTransition):
		return c.renderWebhooks(ctx, http.StatusConflict, "", "Delivery "+id.String()+" is already pending.")
	default:
		return c.orNotFound(ctx, err)
	}
}
