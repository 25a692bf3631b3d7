package api

import "github.com/google/uuid"

// WebhookEvent is the type of an event a webhook endpoint subscribes to.
type WebhookEvent string

// Webhook events. A new event type is one line here and one in internal/webhooks' table.
const (
	EventDecisionRequested WebhookEvent = "decision.requested"
	EventDecisionClosed    WebhookEvent = "decision.closed"
	EventRunEnded          WebhookEvent = "run.ended"
	EventAttemptLost       WebhookEvent = "attempt.lost"
	EventBudgetHeld        WebhookEvent = "budget.held"
)

var webhookEventNames = names{"decision.requested", "decision.closed", "run.ended", "attempt.lost", "budget.held"}

func (v WebhookEvent) String() string     { return string(v) }
func (v WebhookEvent) Valid() bool        { _, ok := webhookEventNames.index(string(v)); return ok }
func (WebhookEvent) EnumValues() []string { return webhookEventNames.values() }
func (v WebhookEvent) MarshalText() ([]byte, error) {
	return webhookEventNames.marshalString(string(v), "webhook event")
}
func (v *WebhookEvent) UnmarshalText(b []byte) error {
	s, err := webhookEventNames.unmarshalString(b)
	*v = WebhookEvent(s)
	return err
}
func (v *WebhookEvent) UnmarshalJSON(b []byte) error {
	s, err := webhookEventNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// DeliveryStatus is a webhook delivery's status: pending until delivered or failed.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
)

var deliveryStatusNames = names{"pending", "delivered", "failed"}

func (v DeliveryStatus) String() string     { return string(v) }
func (v DeliveryStatus) Valid() bool        { _, ok := deliveryStatusNames.index(string(v)); return ok }
func (DeliveryStatus) EnumValues() []string { return deliveryStatusNames.values() }
func (v DeliveryStatus) MarshalText() ([]byte, error) {
	return deliveryStatusNames.marshalString(string(v), "delivery status")
}
func (v *DeliveryStatus) UnmarshalText(b []byte) error {
	s, err := deliveryStatusNames.unmarshalString(b)
	*v = DeliveryStatus(s)
	return err
}
func (v *DeliveryStatus) UnmarshalJSON(b []byte) error {
	s, err := deliveryStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// PutWebhookRequest is the body of PUT /v1/webhooks/{webhookName}. On update, absent
// optional members keep their value.
type PutWebhookRequest struct {
	URL         string         `json:"url" validate:"required,max=2048" doc:"https:// (http:// only where the server allows it); private, loopback, link-local and unique-local targets are refused unless the server allows them."`
	Events      []WebhookEvent `json:"events" validate:"required,min=1,max=16,dive"`
	Active      *bool          `json:"active,omitempty" default:"true"`
	Description *string        `json:"description,omitempty" validate:"omitempty,max=1024"`
}

// Webhook is an endpoint that receives the tenant's events. Secret is present only in the
// answer of a create and of rotate-secret: it is shown once.
type Webhook struct {
	Name        string         `json:"name"`
	URL         string         `json:"url"`
	Events      []WebhookEvent `json:"events"`
	Active      bool           `json:"active"`
	Description *string        `json:"description,omitempty"`
	// DisabledAt is when the endpoint answered 410 Gone and was made inactive.
	DisabledAt *Time   `json:"disabledAt,omitempty"`
	Secret     *string `json:"secret,omitempty" doc:"The signing secret (whsec_ and base64), shown only when created or rotated."`
	CreatedAt  Time    `json:"createdAt"`
	UpdatedAt  Time    `json:"updatedAt"`
}

// WebhookItem is a webhook as a listing shows it.
type WebhookItem struct {
	Webhook
	ETag string `json:"etag"`
}

// WebhookDelivery is one event sent (or to be sent) to one endpoint. DeliveryID is the
// webhook-id header, the same on every try.
type WebhookDelivery struct {
	DeliveryID     uuid.UUID      `json:"deliveryId"`
	Webhook        string         `json:"webhook"`
	Event          WebhookEvent   `json:"event"`
	Status         DeliveryStatus `json:"status"`
	Attempts       int            `json:"attempts"`
	CreatedAt      Time           `json:"createdAt"`
	NextAttemptAt  *Time          `json:"nextAttemptAt,omitempty" doc:"When a pending delivery is tried next."`
	LastAttemptAt  *Time          `json:"lastAttemptAt,omitempty"`
	LastStatusCode *int           `json:"lastStatusCode,omitempty" doc:"The HTTP status of the last try (absent when it got none)."`
	LastError      *string        `json:"lastError,omitempty"`
	DeliveredAt    *Time          `json:"deliveredAt,omitempty"`
}

// ListWebhookDeliveriesParams are the query parameters of GET /v1/webhook-deliveries.
type ListWebhookDeliveriesParams struct {
	Status  *DeliveryStatus `query:"status"`
	Event   *WebhookEvent   `query:"event"`
	Webhook *string         `query:"webhook" validate:"omitempty,ident=64" doc:"Only this endpoint's deliveries."`
	PageParams
}
