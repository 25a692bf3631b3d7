package webhooks

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the webhook routes (admin only: endpoints carry secrets and URLs).
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	admin := []string{tenancy.RoleAdmin}
	s.Route(http.MethodPut, "/v1/webhooks/:webhookName", web.Op{
		ID: "putWebhook", Tag: "Webhooks", Summary: "Create or update a webhook endpoint",
		Description: "Creates the endpoint (201 with Location, no If-Match; the answer carries the signing secret, the only time it is shown) " +
			"or updates it (200; If-Match required). The URL must be https:// (http:// only with --webhook-allow-http); a host resolving to a " +
			"private, loopback, link-local or unique-local address is refused (422 webhook_target_refused) unless --webhook-allow-private.",
		Roles: admin, Body: api.PutWebhookRequest{},
		Example: api.PutWebhookRequest{URL: "https://hooks.example.com/ledger", Events: []api.WebhookEvent{api.EventDecisionRequested}},
		Status:  http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Webhook{}, ETag: true, IfMatch: PutIfMatch,
		Problems: []api.ProblemCode{api.CodeWebhookTarget, api.CodeWebhookLimit},
	}, h.put)
	s.Route(http.MethodGet, "/v1/webhooks", web.Op{
		ID: "listWebhooks", Tag: "Webhooks", Summary: "List the tenant's webhook endpoints", Roles: admin,
		Status: http.StatusOK, Response: api.Page[api.WebhookItem]{}, Query: api.PageParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/webhooks/:webhookName", web.Op{
		ID: "getWebhook", Tag: "Webhooks", Summary: "Read a webhook endpoint", Roles: admin,
		Status: http.StatusOK, Response: api.Webhook{}, ETag: true, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodDelete, "/v1/webhooks/:webhookName", web.Op{
		ID: "deleteWebhook", Tag: "Webhooks", Summary: "Delete a webhook endpoint",
		Description: "Deletes the endpoint (204); its pending deliveries fail at their next try.",
		Roles:       admin, Status: http.StatusNoContent, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.delete)
	s.Route(http.MethodPost, "/v1/webhooks/:webhookName/rotate-secret", web.Op{
		ID: "rotateWebhookSecret", Tag: "Webhooks", Summary: "Give a webhook endpoint a new signing secret",
		Description: "Answers the endpoint with its new secret (shown once). The old secret stays valid for 24 hours: deliveries carry both signatures.",
		Roles:       admin, Status: http.StatusOK, Response: api.Webhook{}, ETag: true, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.rotate)
	s.Route(http.MethodGet, "/v1/webhook-deliveries", web.Op{
		ID: "listWebhookDeliveries", Tag: "Webhooks", Summary: "List webhook deliveries, newest first",
		Description: "Each delivery with its tries, last status and next try. Order of deliveries to an endpoint is not promised.",
		Roles:       admin, Status: http.StatusOK, Response: api.Page[api.WebhookDelivery]{}, Query: api.ListWebhookDeliveriesParams{},
	}, h.deliveries)
	s.Route(http.MethodPost, "/v1/webhook-deliveries/:deliveryId/redeliver", web.Op{
		ID: "redeliverWebhook", Tag: "Webhooks", Summary: "Send a delivered or failed delivery again",
		Description: "Makes the delivery pending, due now and retried for 24 hours, with the same webhook-id; 409 illegal_transition while it is pending.",
		Roles:       admin, Status: http.StatusOK, Response: api.WebhookDelivery{},
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeIllegalTransition},
	}, h.redeliver)
}

type handlers struct{ store *Store }

func (h handlers) put(c echo.Context) error {
	name, err := web.PathIdent(c, "webhookName")
	if err != nil {
		return err
	}
	var req api.PutWebhookRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c)
	if err != nil {
		return err
	}
	ch := Change{URL: req.URL, Events: req.Events, Active: req.Active, Description: req.Description, IfMatch: ifMatch}
	e, secret, created, err := h.store.Put(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, name, ch)
	if err != nil {
		return err
	}
	w := e.Wire()
	if created {
		w.Secret = &secret
		return web.Created(c, web.Path("v1", "webhooks", name), e.Version, w)
	}
	return web.JSONWithETag(c, http.StatusOK, e.Version, w)
}

func (h handlers) get(c echo.Context) error {
	name, err := web.PathIdent(c, "webhookName")
	if err != nil {
		return err
	}
	e, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, name)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, e.Version, e.Wire())
}

func (h handlers) delete(c echo.Context) error {
	name, err := web.PathIdent(c, "webhookName")
	if err != nil {
		return err
	}
	if err := h.store.Delete(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h handlers) rotate(c echo.Context) error {
	name, err := web.PathIdent(c, "webhookName")
	if err != nil {
		return err
	}
	e, secret, err := h.store.RotateSecret(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, name)
	if err != nil {
		return err
	}
	w := e.Wire()
	w.Secret = &secret
	return web.JSONWithETag(c, http.StatusOK, e.Version, w)
}

type nameCursor struct {
	After string `json:"a"`
}

func (h handlers) list(c echo.Context) error {
	var q api.PageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q)
	var cur nameCursor
	if _, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	}
	es, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, cur.After, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, es, limit, func(last Endpoint) any { return nameCursor{After: last.Name} }, Endpoint.Item)
}

type deliveryCursor struct {
	Position
	Filters string `json:"f,omitempty"`
}

func (h handlers) deliveries(c echo.Context) error {
	var q api.ListWebhookDeliveriesParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	var cur deliveryCursor
	has, err := web.DecodeCursor(c, &cur)
	if err != nil {
		return err
	}
	filters := web.FilterKey(c)
	if has && cur.Filters != filters {
		return web.CursorOfOtherFilters()
	}
	f := DeliveryFilter{Status: q.Status, Event: q.Event, Webhook: q.Webhook, Limit: limit + 1}
	if has {
		f.Before = &cur.Position
	}
	ds, err := h.store.Deliveries(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return web.WritePage(c, ds, limit, func(last Delivery) any {
		return deliveryCursor{Position: Position{CreatedAt: last.CreatedAt, DeliveryID: last.DeliveryID}, Filters: filters}
	}, Delivery.Wire)
}

func (h handlers) redeliver(c echo.Context) error {
	id, err := web.PathUUID(c, "deliveryId")
	if err != nil {
		return err
	}
	d, err := h.store.Redeliver(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d.Wire())
}
