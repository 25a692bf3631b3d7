package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/client"
)

// The Standard Webhooks specification's test vector verifies; a changed byte of the body,
// the id or the signature, another secret, or a timestamp outside the tolerance does not.
func TestVerifyWebhookSpecVector(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	header := func(id, sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", "1614265330")
		h.Set("webhook-signature", sig)
		return h
	}
	const id, sig = "msg_p5jXN8AQM9LWM0D4loKWxJek", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	at := time.Unix(1614265330, 0).Add(time.Minute)
	if err := client.VerifyWebhookAt(secret, header(id, sig), body, at); err != nil {
		t.Fatalf("the spec's vector does not verify: %v", err)
	}
	if err := client.VerifyWebhookAt(secret, header(id, "v1,bogus "+sig), body, at); err != nil {
		t.Fatalf("a list with a valid signature does not verify: %v", err)
	}
	changed := []byte(`{"test": 2432232315}`)
	for name, c := range map[string]struct {
		secret string
		h      http.Header
		body   []byte
		at     time.Time
	}{
		"body":      {secret, header(id, sig), changed, at},
		"id":        {secret, header(id+"x", sig), body, at},
		"signature": {secret, header(id, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OF="), body, at},
		"secret":    {"whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx", header(id, sig), body, at},
		"too old":   {secret, header(id, sig), body, at.Add(10 * time.Minute)},
		"too new":   {secret, header(id, sig), body, at.Add(-10 * time.Minute)},
		"no id":     {secret, header("", sig), body, at},
	} {
		if err := client.VerifyWebhookAt(c.secret, c.h, c.body, c.at); !errors.Is(err, client.ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", name, err)
		}
	}
}
