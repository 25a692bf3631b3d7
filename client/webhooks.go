package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ledger-dev/ledger/api"
)

// WebhookTolerance is how far a delivery's webhook-timestamp may be from now.
const WebhookTolerance = 5 * time.Minute

// ErrWebhookSignature is a delivery whose signature, headers or timestamp do not verify.
var ErrWebhookSignature = errors.New("webhook does not verify")

// VerifyWebhook checks a delivery the ledger sent, as the Standard Webhooks specification
// says: one of the webhook-signature header's v1 signatures must be the HMAC-SHA256 of
// "{webhook-id}.{webhook-timestamp}.{body}" under secret (whsec_…), compared in constant
// time, and the timestamp within WebhookTolerance of now. Pass the request's headers and
// its body exactly as received.
func VerifyWebhook(secret string, header http.Header, body []byte) error {
	return VerifyWebhookAt(secret, header, body, time.Now())
}

// VerifyWebhookAt is VerifyWebhook with the time to check the timestamp against.
func VerifyWebhookAt(secret string, header http.Header, body []byte, now time.Time) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWebhookSignature, err)
	}
	ts, err := strconv.ParseInt(header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad webhook-timestamp", ErrWebhookSignature)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return fmt.Errorf("%w: timestamp outside the tolerance", ErrWebhookSignature)
	}
	if err := wh.VerifyIgnoringTimestamp(body, header); err != nil {
		return fmt.Errorf("%w: %v", ErrWebhookSignature, err)
	}
	return nil
}

// PutWebhook creates the endpoint (ifMatch empty: the answer carries its secret, shown
// once) or updates it with the ETag it was read with, and returns it with its new ETag.
func (c *Client) PutWebhook(ctx context.Context, name string, req api.PutWebhookRequest, ifMatch string) (api.Webhook, string, error) {
	var out api.Webhook
	res, err := c.do(ctx, call{op: "putWebhook", params: []string{name}, body: req, ifMatch: ifMatch, out: &out})
	return out, res.etag(), err
}

// GetWebhook reads an endpoint (without its secret) and its ETag.
func (c *Client) GetWebhook(ctx context.Context, name string) (api.Webhook, string, error) {
	var out api.Webhook
	res, err := c.do(ctx, call{op: "getWebhook", params: []string{name}, out: &out})
	return out, res.etag(), err
}

// ListWebhooks reads one page of the tenant's endpoints.
func (c *Client) ListWebhooks(ctx context.Context, params api.PageParams) (api.Page[api.WebhookItem], error) {
	return list[api.WebhookItem](ctx, c, "listWebhooks", params)
}

// DeleteWebhook deletes an endpoint.
func (c *Client) DeleteWebhook(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{op: "deleteWebhook", params: []string{name}})
	return err
}

// RotateWebhookSecret gives the endpoint a new secret (in the answer, shown once); the old
// one keeps signing for 24 hours. Not repeated: a repeat would rotate again.
func (c *Client) RotateWebhookSecret(ctx context.Context, name string) (api.Webhook, error) {
	var out api.Webhook
	_, err := c.do(ctx, call{op: "rotateWebhookSecret", params: []string{name}, out: &out})
	return out, err
}

// ListWebhookDeliveries reads one page of deliveries, newest first.
func (c *Client) ListWebhookDeliveries(ctx context.Context, params api.ListWebhookDeliveriesParams) (api.Page[api.WebhookDelivery], error) {
	return list[api.WebhookDelivery](ctx, c, "listWebhookDeliveries", params)
}

// Redeliver sends a delivered or failed delivery again, with the same webhook-id.
func (c *Client) Redeliver(ctx context.Context, id uuid.UUID) (api.WebhookDelivery, error) {
	var out api.WebhookDelivery
	_, err := c.do(ctx, call{op: "redeliverWebhook", params: []string{id.String()}, out: &out})
	return out, err
}
