package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

// TestWebhooksPageRedeliver: the webhooks page lists the endpoints and the recent failed
// deliveries; its redeliver button makes a failure pending again (once: a second press is
// refused while it is pending); another tenant sees none of it and cannot redeliver it.
func TestWebhooksPageRedeliver(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true, App: app.Config{Webhooks: webhooks.Config{AllowHTTP: true, AllowPrivate: true}}})
	tn := s.NewTenant(t)
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
	t.Cleanup(gone.Close)
	tn.Must(http.StatusCreated, http.MethodPut, "/v1/webhooks/chat", tn.Admin,
		api.PutWebhookRequest{URL: gone.URL, Events: []api.WebhookEvent{api.EventRunEnded}})
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	tn.Must(http.StatusOK, http.MethodPost, cl.Path("/complete"), tn.Runtime, map[string]any{"fencingToken": cl.Lease.FencingToken, "state": "succeeded"})
	if _, err := s.App.Dispatcher.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var page api.Page[api.WebhookDelivery]
	tn.Must(http.StatusOK, http.MethodGet, "/v1/webhook-deliveries?status=failed", tn.Admin, nil).Decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("failed deliveries: %+v", page.Items)
	}
	id := page.Items[0].DeliveryID.String()

	c, csrf, _ := httpSession(t, s, tn.Admin)
	st, body := get(t, c, s, "/ui/webhooks")
	if st != http.StatusOK || !strings.Contains(body, `data-webhook="chat"`) || !strings.Contains(body, "disabled (410)") ||
		!strings.Contains(body, `data-delivery="`+id+`"`) {
		t.Fatalf("webhooks page (%d) lacks the endpoint or its failure:\n%s", st, body)
	}
	post := func(c *http.Client, csrf string) *http.Response {
		r, err := c.PostForm(s.URL+"/ui/webhook-deliveries/"+id+"/redeliver", url.Values{"csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r
	}
	if r := post(c, csrf); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", r.StatusCode)
	}
	tn.Must(http.StatusOK, http.MethodGet, "/v1/webhook-deliveries?status=pending", tn.Admin, nil).Decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].DeliveryID.String() != id {
		t.Fatalf("after redeliver: %+v", page.Items)
	}
	if r := post(c, csrf); r.StatusCode != http.StatusConflict {
		t.Fatalf("second redeliver while pending: %d", r.StatusCode)
	}

	other := s.NewTenant(t)
	oc, ocsrf, _ := httpSession(t, s, other.Admin)
	if _, body := get(t, oc, s, "/ui/webhooks"); strings.Contains(body, id) || strings.Contains(body, `data-webhook="chat"`) {
		t.Fatal("another tenant's webhooks page shows this tenant's")
	}
	if r := post(oc, ocsrf); r.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's redeliver: %d", r.StatusCode)
	}
}
