package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/client"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/webhooks"
)

// received is one request a test receiver got.
type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Event                    string
}

// receiver is an endpoint on 127.0.0.1 that answers with answer and keeps what it got.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer atomic.Int32
}

func newReceiver(t *testing.T, h func(w http.ResponseWriter, r *http.Request) bool) *receiver {
	rc := &receiver{}
	rc.answer.Store(http.StatusNoContent)
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &env)
		rc.mu.Lock()
		rc.got = append(rc.got, received{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), Body: body, Event: env.Type})
		rc.mu.Unlock()
		if h != nil && h(w, r) {
			return
		}
		w.WriteHeader(int(rc.answer.Load()))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) count(event string) int {
	n := 0
	for _, r := range rc.all() {
		if r.Event == event {
			n++
		}
	}
	return n
}

// open is a stack whose webhooks may reach this machine (the tests' receivers listen on
// 127.0.0.1 over http), with retries' jitter pinned.
func open(t *testing.T, mod func(*app.Config)) *apitest.Stack {
	cfg := app.Config{Webhooks: webhooks.Config{AllowHTTP: true, AllowPrivate: true},
		WebhookDispatch: webhooks.DispatcherConfig{Jitter: func() float64 { return 1 }}}
	if mod != nil {
		mod(&cfg)
	}
	return apitest.New(t, apitest.Config{App: cfg})
}

// subscribe creates an endpoint of the tenant and returns its secret.
func subscribe(t *testing.T, tn *apitest.Tenant, name, u string, events ...api.WebhookEvent) string {
	var w api.Webhook
	tn.Must(http.StatusCreated, http.MethodPut, "/v1/webhooks/"+name, tn.Admin, api.PutWebhookRequest{URL: u, Events: events}).Decode(t, &w)
	if w.Secret == nil {
		t.Fatal("a create answers the secret")
	}
	return *w.Secret
}

var allEvents = []api.WebhookEvent{api.EventDecisionRequested, api.EventDecisionClosed, api.EventRunEnded, api.EventAttemptLost}

func complete(t *testing.T, tn *apitest.Tenant, cl apitest.Claimed) {
	tn.Must(http.StatusOK, http.MethodPost, cl.Path("/complete"), tn.Runtime,
		map[string]any{"fencingToken": cl.Lease.FencingToken, "state": "failed"})
}

func deliver(t *testing.T, st *apitest.Stack) {
	if _, err := st.App.Dispatcher.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Each event reaches the receiver exactly once per committed change, with tenant-visible
// fields only; a change rolled back by a later failure in its transaction sends nothing.
func TestEventsOncePerCommittedChange(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	subscribe(t, tn, "all", rc.srv.URL, allEvents...)

	// decision.requested, decision.closed (answered), run.ended.
	tn.Enqueue("s1", "batch")
	cl, ok, _ := tn.Claim(60, nil)
	if !ok {
		t.Fatal("nothing claimed")
	}
	var d api.Decision
	tn.Must(http.StatusCreated, http.MethodPost, cl.Path("/decisions"), tn.Runtime,
		map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": "approval", "recommendation": "secret plan"}).Decode(t, &d)
	r := tn.Must(http.StatusOK, http.MethodGet, "/v1/decisions/"+d.DecisionID.String(), tn.Admin, nil)
	tn.Must(http.StatusOK, http.MethodPost, "/v1/decisions/"+d.DecisionID.String()+"/answer", tn.Admin,
		map[string]any{"status": "approved"}, "If-Match", r.Header.Get("ETag"))
	complete(t, tn, cl)

	// attempt.lost: a lease that runs out, taken back by the reaper (the run is queued again,
	// not ended).
	tn.Enqueue("s2", "batch")
	if _, ok, _ := tn.Claim(5, nil); !ok {
		t.Fatal("nothing claimed")
	}
	st.Clock.Advance(10 * time.Second)
	if _, err := st.Svc.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A complete whose transaction fails after the outbox row was written: rolled back.
	tn.Enqueue("s3", "batch")
	cl3, ok, _ := tn.Claim(60, nil)
	if !ok {
		t.Fatal("nothing claimed")
	}
	st.Svc.AddHooks(runs.Hooks{RunChanged: func(_ context.Context, _ *sqldb.Tx, run runs.Run) error {
		if run.RunID == cl3.Run.RunID && run.State == api.RunEnded {
			return errors.New("injected fault")
		}
		return nil
	}})
	if r := tn.Do(http.MethodPost, cl3.Path("/complete"), tn.Runtime, map[string]any{"fencingToken": cl3.Lease.FencingToken, "state": "succeeded"}); r.Status != http.StatusInternalServerError {
		t.Fatalf("complete under the fault: %d %s", r.Status, r.Body)
	}

	deliver(t, st)
	deliver(t, st) // nothing is sent twice
	for ev, want := range map[string]int{"decision.requested": 1, "decision.closed": 1, "run.ended": 1, "attempt.lost": 1} {
		if got := rc.count(ev); got != want {
			t.Errorf("%s received %d times, want %d", ev, got, want)
		}
	}
	for _, g := range rc.all() {
		var env struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(g.Body, &env); err != nil {
			t.Fatal(err)
		}
		for _, forbidden := range []string{"input", "answer", "recommendation", "options", "secret"} {
			if _, ok := env.Data[forbidden]; ok {
				t.Errorf("%s payload carries %q: %s", g.Event, forbidden, g.Body)
			}
		}
		if env.Data["consoleUrl"] == nil {
			t.Errorf("%s payload has no console link: %s", g.Event, g.Body)
		}
		if g.Event == "run.ended" && env.Data["outcome"] != "failed" {
			t.Errorf("run.ended lacks its outcome: %s", g.Body)
		}
	}
	// A tenant without endpoints gets no outbox rows.
	other := st.NewTenant(t)
	other.Enqueue("s1", "batch")
	clo, _, _ := other.Claim(60, nil)
	complete(t, other, clo)
	if n := st.Rows(t, "WebhookDeliveries", other.ID); n != 0 {
		t.Fatalf("a tenant without webhooks has %d deliveries", n)
	}
}

// A 500-answering endpoint is retried on the backoff schedule and the delivery ends failed
// once the next try would fall past 24 hours.
func TestServerErrorRetriedThenFailed(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	rc.answer.Store(http.StatusInternalServerError)
	subscribe(t, tn, "down", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	start := st.Clock.Now()

	var elapsed time.Duration
	for n := 1; ; n++ {
		deliver(t, st)
		ds := deliveries(t, st, tn, "")
		if len(ds) != 1 || ds[0].Attempts != n || ds[0].LastStatusCode == nil || *ds[0].LastStatusCode != 500 {
			t.Fatalf("after try %d: %+v", n, ds)
		}
		if ds[0].Status == api.DeliveryFailed {
			if elapsed+webhooks.Backoff(n, 1) <= webhooks.RetryFor {
				t.Fatalf("failed after %d tries at %v, before 24h ran out", n, elapsed)
			}
			break
		}
		next := ds[0].NextAttemptAt.Time
		if got, want := next.Sub(st.Clock.Now()), webhooks.Backoff(n, 1); got != want {
			t.Fatalf("try %d: next in %v, want %v", n, got, want)
		}
		st.Clock.Advance(next.Sub(st.Clock.Now()) - time.Millisecond)
		deliver(t, st) // not due yet
		st.Clock.Advance(time.Millisecond)
		elapsed = st.Clock.Now().Sub(start)
	}
	if got := len(rc.all()); got < 20 {
		t.Fatalf("only %d tries in 24 hours", got)
	}
	ids := map[string]bool{}
	for _, g := range rc.all() {
		ids[g.ID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("webhook-id changed across retries: %v", ids)
	}
}

func deliveries(t *testing.T, st *apitest.Stack, tn *apitest.Tenant, query string) []api.WebhookDelivery {
	var page api.Page[api.WebhookDelivery]
	tn.Must(http.StatusOK, http.MethodGet, "/v1/webhook-deliveries"+query, tn.Admin, nil).Decode(t, &page)
	return page.Items
}

// A redirect is an answer: its target is never requested, and the delivery is retried.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, target.srv.URL, http.StatusFound)
		return true
	})
	subscribe(t, tn, "moved", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	deliver(t, st)
	if len(rc.all()) != 1 || len(target.all()) != 0 {
		t.Fatalf("endpoint got %d, redirect target got %d", len(rc.all()), len(target.all()))
	}
	ds := deliveries(t, st, tn, "?status=pending")
	if len(ds) != 1 || *ds[0].LastStatusCode != http.StatusFound {
		t.Fatalf("%+v", ds)
	}
}

// A 410 disables the endpoint and fails the delivery; redeliver sends it again with the
// same webhook-id once the endpoint is active again.
func TestGoneDisablesAndRedeliver(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	rc.answer.Store(http.StatusGone)
	subscribe(t, tn, "gone", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	deliver(t, st)
	var w api.Webhook
	r := tn.Must(http.StatusOK, http.MethodGet, "/v1/webhooks/gone", tn.Admin, nil)
	r.Decode(t, &w)
	if w.Active || w.DisabledAt == nil {
		t.Fatalf("a 410 left the endpoint %+v", w)
	}
	ds := deliveries(t, st, tn, "?status=failed&webhook=gone&event=run.ended")
	if len(ds) != 1 {
		t.Fatalf("%+v", ds)
	}
	tn.Must(http.StatusOK, http.MethodPut, "/v1/webhooks/gone", tn.Admin,
		api.PutWebhookRequest{URL: rc.srv.URL, Events: []api.WebhookEvent{api.EventRunEnded}, Active: api.Ptr(true)}, "If-Match", r.Header.Get("ETag"))
	rc.answer.Store(http.StatusOK)
	tn.Must(http.StatusOK, http.MethodPost, "/v1/webhook-deliveries/"+ds[0].DeliveryID.String()+"/redeliver", tn.Admin, nil)
	apitest.WantProblem(t, tn.Do(http.MethodPost, "/v1/webhook-deliveries/"+ds[0].DeliveryID.String()+"/redeliver", tn.Admin, nil),
		http.StatusConflict, "illegal_transition")
	deliver(t, st)
	got := rc.all()
	if len(got) != 2 || got[0].ID != got[1].ID || got[1].ID != ds[0].DeliveryID.String() {
		t.Fatalf("redelivery: %+v", got)
	}
	if ds := deliveries(t, st, tn, "?status=delivered"); len(ds) != 1 {
		t.Fatalf("%+v", ds)
	}
	// Another tenant sees none of it.
	other := st.NewTenant(t)
	apitest.WantProblem(t, other.Do(http.MethodPost, "/v1/webhook-deliveries/"+ds[0].DeliveryID.String()+"/redeliver", other.Admin, nil),
		http.StatusNotFound, "not_found")
	if ds := deliveries(t, st, other, ""); len(ds) != 0 {
		t.Fatalf("another tenant lists %d deliveries", len(ds))
	}
}

// Private targets are refused at create, by address and by a name resolving to one, and
// at delivery when a name that resolved elsewhere at create now resolves to one.
func TestPrivateTargetRefused(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	port := rc.srv.Listener.Addr().(interface{ String() string }).String()
	_, p, _ := splitPort(port)
	var lookups atomic.Int32
	st := open(t, func(c *app.Config) {
		c.Webhooks = webhooks.Config{AllowHTTP: true, LookupNetIP: func(_ context.Context, _, host string) ([]netip.Addr, error) {
			switch host {
			case "loop.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "rebind.test":
				// Public (a documentation address, never dialled) when the endpoint is created,
				// loopback from then on.
				if lookups.Add(1) == 1 {
					return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		}}
	})
	tn := st.NewTenant(t)
	for _, u := range []string{rc.srv.URL, "http://loop.test:" + p + "/", "http://[::1]:" + p + "/", "http://10.1.2.3/", "http://169.254.169.254/"} {
		apitest.WantProblem(t, tn.Do(http.MethodPut, "/v1/webhooks/w", tn.Admin, api.PutWebhookRequest{URL: u, Events: allEvents}),
			http.StatusUnprocessableEntity, "webhook_target_refused")
	}
	subscribe(t, tn, "rebind", "http://rebind.test:"+p+"/", api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	deliver(t, st)
	if n := len(rc.all()); n != 0 {
		t.Fatalf("the receiver on loopback got %d requests", n)
	}
	ds := deliveries(t, st, tn, "")
	if len(ds) != 1 || ds[0].LastError == nil || ds[0].Status != api.DeliveryPending {
		t.Fatalf("%+v", ds)
	}
	// https only without the http allowance.
	st2 := open(t, func(c *app.Config) { c.Webhooks = webhooks.Config{AllowPrivate: true} })
	tn2 := st2.NewTenant(t)
	apitest.WantFields(t, tn2.Do(http.MethodPut, "/v1/webhooks/w", tn2.Admin, api.PutWebhookRequest{URL: rc.srv.URL, Events: allEvents}), "url")
}

func splitPort(hostport string) (string, string, error) {
	u, err := url.Parse("http://" + hostport)
	if err != nil {
		return "", "", err
	}
	return u.Hostname(), u.Port(), nil
}

// Signatures verify with the current secret (and the rotated-out one for its overlap) and
// fail with a changed byte.
func TestSignaturesVerify(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	secret := subscribe(t, tn, "signed", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	deliver(t, st)
	var rot api.Webhook
	tn.Must(http.StatusOK, http.MethodPost, "/v1/webhooks/signed/rotate-secret", tn.Admin, nil).Decode(t, &rot)
	tn.Enqueue("s2", "batch")
	cl2, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl2)
	deliver(t, st)
	got := rc.all()
	if len(got) != 2 {
		t.Fatalf("got %d", len(got))
	}
	now := st.Clock.Now()
	for i, g := range got {
		h := http.Header{}
		h.Set("webhook-id", g.ID)
		h.Set("webhook-timestamp", g.Timestamp)
		h.Set("webhook-signature", g.Signature)
		for _, s := range []string{secret, *rot.Secret} {
			if i == 0 && s == *rot.Secret {
				continue // sent before the rotation
			}
			if err := client.VerifyWebhookAt(s, h, g.Body, now); err != nil {
				t.Errorf("delivery %d does not verify with %s: %v", i, s[:10], err)
			}
			bad := append([]byte(nil), g.Body...)
			bad[len(bad)/2] ^= 1
			if err := client.VerifyWebhookAt(s, h, bad, now); err == nil {
				t.Errorf("delivery %d verifies with a changed byte", i)
			}
		}
	}
	if err := client.VerifyWebhookAt(webhooks.NewSecret(), http.Header{"Webhook-Id": {got[0].ID}, "Webhook-Timestamp": {got[0].Timestamp},
		"Webhook-Signature": {got[0].Signature}}, got[0].Body, now); err == nil {
		t.Error("a delivery verifies with another secret")
	}
}

// Two replicas dispatching at once deliver each delivery exactly once.
func TestTwoReplicasNeverDoubleDeliver(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	st2 := st.Replica(t, apitest.Config{App: app.Config{Webhooks: webhooks.Config{AllowHTTP: true, AllowPrivate: true}}})
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	subscribe(t, tn, "a", rc.srv.URL, api.EventRunEnded)
	subscribe(t, tn, "b", rc.srv.URL, api.EventRunEnded)
	const runs = 12
	for i := range runs {
		tn.Enqueue(fmt.Sprintf("s%d", i), "batch")
		cl, _, _ := tn.Claim(60, nil)
		complete(t, tn, cl)
	}
	for range 4 {
		var wg sync.WaitGroup
		for _, s := range []*apitest.Stack{st, st2} {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = s.App.Dispatcher.DeliverDue(context.Background()) }()
		}
		wg.Wait()
	}
	seen := map[string]int{}
	for _, g := range rc.all() {
		seen[g.ID]++
	}
	if len(seen) != 2*runs {
		t.Fatalf("%d deliveries received, want %d", len(seen), 2*runs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s received %d times", id, n)
		}
	}
}

// A replica that dies mid-delivery (its try never records) leaves the delivery to another
// replica once the lease runs out, which sends it with the same webhook-id.
func TestKilledReplicaDeliveryTakenOver(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	st2 := st.Replica(t, apitest.Config{App: app.Config{Webhooks: webhooks.Config{AllowHTTP: true, AllowPrivate: true}}})
	tn := st.NewTenant(t)
	hung, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) bool {
		if first.CompareAndSwap(false, true) {
			close(hung)
			<-release // the first replica's try never gets its answer in time
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	subscribe(t, tn, "slow", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	if n, err := st.App.Dispatcher.Tick(context.Background()); err != nil || n != 1 {
		t.Fatalf("first replica started %d: %v", n, err)
	}
	<-hung
	// While the lease holds, the second replica leaves it alone.
	if n, _ := st2.App.Dispatcher.DeliverDue(context.Background()); n != 0 {
		t.Fatalf("second replica took a leased delivery")
	}
	st.Clock.Advance(webhooks.LeaseFor + time.Second)
	if n, _ := st2.App.Dispatcher.DeliverDue(context.Background()); n != 1 {
		t.Fatalf("second replica did not take over the expired lease")
	}
	close(release)
	st.App.Dispatcher.Wait() // the first try's late answer finds its lease lost
	got := rc.all()
	if len(got) != 2 || got[0].ID != got[1].ID {
		t.Fatalf("%+v", got)
	}
	ds := deliveries(t, st, tn, "")
	if len(ds) != 1 || ds[0].Status != api.DeliveryDelivered || ds[0].Attempts != 2 {
		t.Fatalf("%+v", ds)
	}
}

// A tenant whose endpoint hangs does not hold up another tenant's delivery: the hanging
// tenant is at its cap, and the due read leaves its rows out.
func TestHangingTenantDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	st := open(t, func(c *app.Config) { c.WebhookDispatch.PerTenant = 1; c.WebhookDispatch.Workers = 2 })
	slow, fast := st.NewTenant(t), st.NewTenant(t)
	release := make(chan struct{})
	hang := newReceiver(t, func(w http.ResponseWriter, r *http.Request) bool { <-release; return false })
	ok := newReceiver(t, nil)
	subscribe(t, slow, "hang", hang.srv.URL, api.EventRunEnded)
	subscribe(t, fast, "ok", ok.srv.URL, api.EventRunEnded)
	for i := range 3 {
		slow.Enqueue(fmt.Sprintf("s%d", i), "batch")
		cl, _, _ := slow.Claim(60, nil)
		complete(t, slow, cl)
	}
	st.Clock.Advance(time.Millisecond) // the slow tenant's rows are older
	fast.Enqueue("s1", "batch")
	cl, _, _ := fast.Claim(60, nil)
	complete(t, fast, cl)
	defer close(release)
	for range 3 {
		if _, err := st.App.Dispatcher.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(webhooks.SendTimeout)
	for len(ok.all()) == 0 {
		select {
		case <-deadline:
			t.Fatal("the other tenant's delivery waited for the hanging endpoint's timeout")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := len(hang.all()); n != 1 {
		t.Fatalf("the hanging tenant has %d tries in flight, its cap is 1", n)
	}
}

// A decision closed by expiry (the background job) and one cancelled because its attempt
// ended each send decision.closed once, with the status they closed with.
func TestDecisionClosedByExpiryAndByAttemptEnd(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	subscribe(t, tn, "closed", rc.srv.URL, api.EventDecisionClosed)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(600, nil)
	tn.Must(http.StatusCreated, http.MethodPost, cl.Path("/decisions"), tn.Runtime,
		map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": "approval", "expiresInSeconds": 60})
	tn.Must(http.StatusCreated, http.MethodPost, cl.Path("/decisions"), tn.Runtime,
		map[string]any{"fencingToken": cl.Lease.FencingToken, "kind": "approval"})
	st.Clock.Advance(2 * time.Minute)
	if n, err := decisions.ExpirePendingNotify(context.Background(), st.DB, st.App.Webhooks); err != nil || n != 1 {
		t.Fatalf("expired %d: %v", n, err)
	}
	complete(t, tn, cl) // cancels the other, still pending
	deliver(t, st)
	statuses := map[string]int{}
	for _, g := range rc.all() {
		var env struct {
			Data struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(g.Body, &env); err != nil {
			t.Fatal(err)
		}
		statuses[env.Data.Status]++
	}
	if len(rc.all()) != 2 || statuses["expired"] != 1 || statuses["cancelled"] != 1 {
		t.Fatalf("decision.closed statuses %v", statuses)
	}
}

// SQL Server lets two replicas read the same due row; the one whose lease finds it taken
// (0 rows) sends nothing. SQLite has one writer, so the fault is injected: just before
// this replica's lease, the row is leased as another replica would have.
func TestLeaseLostToAnotherReplicaSendsNothing(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	subscribe(t, tn, "a", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	var injected atomic.Bool
	st.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, s sqldb.Statement) error {
		if strings.HasPrefix(s.Query, "UPDATE WebhookDeliveries SET Attempts = Attempts + 1") && injected.CompareAndSwap(false, true) {
			_, err := tx.ExecContext(ctx, `UPDATE WebhookDeliveries SET Attempts = Attempts + 1, NextAttemptAt = '9999-01-01T00:00:00.000Z'
WHERE TenantId = ?1`, tn.ID)
			return err
		}
		return nil
	})
	if n, err := st.App.Dispatcher.DeliverDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("started %d tries of a delivery another replica holds: %v", n, err)
	}
	if !injected.Load() || len(rc.all()) != 0 {
		t.Fatalf("injected %v, received %d", injected.Load(), len(rc.all()))
	}
}

// Operations: the metrics count tries by outcome and show the oldest pending delivery's
// age; a deleted endpoint's pending delivery fails at its next try; retention purges
// delivered rows past their 72 hours, and only those.
func TestMetricsDeletedEndpointAndPurge(t *testing.T) {
	t.Parallel()
	st := open(t, nil)
	tn := st.NewTenant(t)
	rc := newReceiver(t, nil)
	subscribe(t, tn, "ok", rc.srv.URL, api.EventRunEnded)
	subscribe(t, tn, "doomed", rc.srv.URL, api.EventRunEnded)
	tn.Enqueue("s1", "batch")
	cl, _, _ := tn.Claim(60, nil)
	complete(t, tn, cl)
	st.Clock.Advance(90 * time.Second)
	if err := st.App.Dispatcher.ObservePending(context.Background()); err != nil {
		t.Fatal(err)
	}
	metrics := func() string {
		return string(st.Do(t, http.MethodGet, "/metrics", "", "", nil).Body)
	}
	if m := metrics(); !strings.Contains(m, "ledger_webhook_oldest_pending_seconds 90") {
		t.Fatalf("oldest pending age not 90 s:\n%s", grep(m, "ledger_webhook"))
	}
	tn.Must(http.StatusNoContent, http.MethodDelete, "/v1/webhooks/doomed", tn.Admin, nil)
	deliver(t, st)
	if m := metrics(); !strings.Contains(m, `ledger_webhook_deliveries_total{outcome="delivered"} 1`) ||
		!strings.Contains(m, `ledger_webhook_deliveries_total{outcome="failed"} 1`) {
		t.Fatalf("outcomes:\n%s", grep(m, "ledger_webhook"))
	}
	if ds := deliveries(t, st, tn, "?status=failed&webhook=doomed"); len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("the deleted endpoint's delivery: %+v", ds)
	}
	ctx := context.Background()
	st.Clock.Advance(webhooks.DeliveredRetention - time.Minute)
	if n, err := webhooks.PurgeDelivered(ctx, st.DB, webhooks.DeliveredRetention); err != nil || n != 0 {
		t.Fatalf("purged %d before their time: %v", n, err)
	}
	st.Clock.Advance(2 * time.Minute)
	if n, err := webhooks.PurgeDelivered(ctx, st.DB, webhooks.DeliveredRetention); err != nil || n != 1 {
		t.Fatalf("purged %d, want the one delivered: %v", n, err)
	}
	if ds := deliveries(t, st, tn, ""); len(ds) != 1 || ds[0].Status != api.DeliveryFailed {
		t.Fatalf("after the purge: %+v", ds)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A tenant without endpoints pays nothing on the write path once this replica has read its
// (empty) subscriptions: a run's end sends no statement about webhooks, and the first end
// in a TTL sends one read of the tenant's endpoints.
func TestNoWebhooksNoStatements(t *testing.T) {
	t.Parallel()
	st := open(t, func(c *app.Config) { c.Webhooks.SubscriptionTTL = time.Hour })
	tn := st.NewTenant(t)
	cycle := func(subject string) []string {
		tn.Enqueue(subject, "batch")
		cl, _, _ := tn.Claim(60, nil)
		var (
			mu   sync.Mutex
			hits []string
		)
		st.DB.SetStatementHook(func(_ context.Context, _ *sqldb.Tx, s sqldb.Statement) error {
			if strings.Contains(s.Query, "Webhook") {
				mu.Lock()
				hits = append(hits, s.Query)
				mu.Unlock()
			}
			return nil
		})
		complete(t, tn, cl)
		st.DB.SetStatementHook(nil)
		mu.Lock()
		defer mu.Unlock()
		return hits
	}
	if hits := cycle("s1"); len(hits) != 1 || !strings.Contains(hits[0], "FROM WebhookEndpoints") {
		t.Fatalf("the first end read %d webhook statements: %q", len(hits), hits)
	}
	if hits := cycle("s2"); len(hits) != 0 {
		t.Fatalf("a warm end sent webhook statements: %q", hits)
	}
}
