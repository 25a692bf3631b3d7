package webhooks

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// signatures is the webhook-signature header of a body: "v1,<base64 HMAC-SHA256 of
// {id}.{timestamp}.{body}>" for each secret (the current one, and a rotated-out one while
// it is still valid), space-separated, as Standard Webhooks specifies.
func signatures(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	var out []string
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return "", fmt.Errorf("webhook secret: %w", err)
		}
		sig, err := wh.Sign(id, ts, body)
		if err != nil {
			return "", err
		}
		out = append(out, sig)
	}
	return strings.Join(out, " "), nil
}

// Headers of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

func setHeaders(h http.Header, id string, ts time.Time, sig string) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, fmt.Sprint(ts.Unix()))
	h.Set(HeaderSignature, sig)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "ledger-webhooks/1")
}
