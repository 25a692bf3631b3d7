// Package webhooks tells people what happened (DESIGN.md section 5b): a tenant's webhook
// endpoints, the outbox of deliveries that the transactions causing events write (so a
// rolled-back change sends nothing and a committed one is sent after any crash), and the
// dispatcher every replica runs, which leases due deliveries, signs them as Standard
// Webhooks do and sends them. Order per endpoint is not promised: retries and several
// replicas reorder deliveries, and receivers deduplicate by webhook-id.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Limits of the feature.
const (
	// MaxEndpoints caps one tenant's endpoints: each event writes a row per subscribed one.
	MaxEndpoints = 16
	// RetryFor is how long a delivery is retried before it is failed.
	RetryFor = 24 * time.Hour
	// SecretOverlap is how long a rotated-out secret still signs (both signatures are sent).
	SecretOverlap = 24 * time.Hour
	// DefaultSubscriptionTTL is how long a replica trusts the tenant's endpoint list it read.
	DefaultSubscriptionTTL = 2 * time.Second
)

// Config is what the webhook store and dispatcher need beyond their database.
type Config struct {
	// AllowHTTP accepts http:// endpoint URLs (--webhook-allow-http).
	AllowHTTP bool
	// AllowPrivate accepts targets on private, loopback, link-local and unique-local
	// addresses (--webhook-allow-private).
	AllowPrivate bool
	// ConsoleURL is the console's base URL for the links in payloads ("" gives paths
	// starting /ui/).
	ConsoleURL string
	// SubscriptionTTL is how long the tenant's endpoint list read by one event serves the
	// next ones on this replica (0: DefaultSubscriptionTTL; negative: never cached).
	SubscriptionTTL time.Duration
	// LookupNetIP resolves a host name (nil: net.DefaultResolver); tests point names at
	// addresses with it.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (c Config) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if c.LookupNetIP != nil {
		return c.LookupNetIP(ctx, "ip", host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Endpoint is one webhook endpoint of a tenant.
type Endpoint struct {
	TenantID            string           `db:"TenantId"`
	Name                string           `db:"Name"`
	URL                 string           `db:"Url"`
	Events              string           `db:"Events"`
	Active              bool             `db:"Active"`
	Description         *string          `db:"Description"`
	Secret              string           `db:"Secret"`
	PreviousSecret      *string          `db:"PreviousSecret"`
	PreviousSecretUntil *time.Time       `db:"PreviousSecretUntil"`
	DisabledAt          *time.Time       `db:"DisabledAt"`
	CreatedAt           time.Time        `db:"CreatedAt"`
	UpdatedAt           time.Time        `db:"UpdatedAt"`
	Version             sqldb.RowVersion `db:"Version"`
}

// EventList is the endpoint's events.
func (e Endpoint) EventList() []api.WebhookEvent { return parseEvents(e.Events) }

// Wire returns the endpoint as the API sends it, without its secret.
func (e Endpoint) Wire() api.Webhook {
	return api.Webhook{Name: e.Name, URL: e.URL, Events: e.EventList(), Active: e.Active, Description: e.Description,
		DisabledAt: api.TimeOf(e.DisabledAt), CreatedAt: api.NewTime(e.CreatedAt), UpdatedAt: api.NewTime(e.UpdatedAt)}
}

// Item is the endpoint as a listing shows it.
func (e Endpoint) Item() api.WebhookItem {
	return api.WebhookItem{Webhook: e.Wire(), ETag: e.Version.ETag()}
}

func joinEvents(evs []api.WebhookEvent) string {
	seen := map[api.WebhookEvent]bool{}
	var out []string
	for _, ev := range evs {
		if !seen[ev] {
			seen[ev] = true
			out = append(out, string(ev))
		}
	}
	return strings.Join(out, ",")
}

func parseEvents(s string) []api.WebhookEvent {
	var out []api.WebhookEvent
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, api.WebhookEvent(p))
		}
	}
	return out
}

// Store keeps endpoints and deliveries, and writes the outbox.
type Store struct {
	db   *sqldb.DB
	q    *queries
	cfg  Config
	subs *subscriptions
}

// NewStore returns the webhook store of db.
func NewStore(db *sqldb.DB, cfg Config) *Store {
	ttl := cfg.SubscriptionTTL
	if ttl == 0 {
		ttl = DefaultSubscriptionTTL
	}
	return &Store{db: db, q: queriesFor(db.Dialect), cfg: cfg, subs: newSubscriptions(ttl)}
}

// PutIfMatch is when Put needs an If-Match condition: to update, not to create.
const PutIfMatch = ifmatch.ToUpdate

// Change is a create or an update of an endpoint.
type Change struct {
	URL         string
	Events      []api.WebhookEvent
	Active      *bool
	Description *string
	IfMatch     sqldb.VersionMatcher
}

// NewSecret makes a signing secret: whsec_ and 32 random bytes in base64.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("webhooks: no randomness: " + err.Error())
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Put creates the endpoint (no IfMatch; its new secret is returned, the only time it is
// shown) or updates it (IfMatch required). Errors: Invalid (url, events), WebhookTarget
// (the URL's host resolves to a refused address), WebhookLimit (MaxEndpoints),
// PreconditionRequired, PreconditionFailed.
func (s *Store) Put(ctx context.Context, tenantID, name string, ch Change) (Endpoint, string, bool, error) {
	if err := s.checkURL(ctx, ch.URL); err != nil {
		return Endpoint{}, "", false, err
	}
	var (
		e       Endpoint
		secret  string
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		secret, created = "", false
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		cur, err := s.getEndpoint(ctx, tx, tenantID, name)
		what := fmt.Sprintf("webhook %q", name)
		switch {
		case apperr.Is(err, api.CodeNotFound):
			if err := ifmatch.Create(ch.IfMatch, what); err != nil {
				return err
			}
			var n int
			if err := tx.GetContext(ctx, &n, s.q.countEndpoints, tenantID, MaxEndpoints); err != nil {
				return err
			}
			if n >= MaxEndpoints {
				return apperr.New(api.CodeWebhookLimit, "the tenant has %d webhooks, as many as it may have", n)
			}
			active := ch.Active == nil || *ch.Active
			secret = NewSecret()
			_, err = tx.ExecContext(ctx, s.q.insertEndpoint, tenantID, name, tx.Dialect.Text(ch.URL), joinEvents(ch.Events), active,
				tx.Dialect.NullText(ch.Description), secret, tx.Dialect.Time(now))
			if sqldb.IsConflict(err) {
				if err := ifmatch.Update(PutIfMatch, nil, 0, what); err != nil {
					return err
				}
				return fmt.Errorf("%s was created meanwhile: %w", what, sqldb.ErrRetryable)
			}
			if err != nil {
				return err
			}
			created = true
		case err != nil:
			return err
		default:
			if err := ifmatch.Update(PutIfMatch, ch.IfMatch, cur.Version, what); err != nil {
				return err
			}
			active, desc := cur.Active, cur.Description
			if ch.Active != nil {
				active = *ch.Active
			}
			if ch.Description != nil {
				desc = ch.Description
			}
			res, err := tx.ExecContext(ctx, s.q.updateEndpoint, tenantID, name, tx.Dialect.Text(ch.URL), joinEvents(ch.Events), active,
				tx.Dialect.NullText(desc), tx.Dialect.Time(now), tx.Dialect.Version(cur.Version))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return ifmatch.Stale(what)
			}
		}
		tx.AfterCommit(func() { s.subs.forget(tenantID) })
		e, err = s.getEndpoint(ctx, tx, tenantID, name)
		return err
	})
	if err != nil {
		return Endpoint{}, "", false, fmt.Errorf("put webhook: %w", err)
	}
	return e, secret, created, nil
}

// Get reads one endpoint (NotFound if missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID, name string) (Endpoint, error) {
	var e Endpoint
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		e, err = s.getEndpoint(ctx, tx, tenantID, name)
		return err
	})
	return e, err
}

func (s *Store) getEndpoint(ctx context.Context, tx *sqldb.Tx, tenantID, name string) (Endpoint, error) {
	var e Endpoint
	err := tx.GetContext(ctx, &e, s.q.getEndpoint, tenantID, name)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Endpoint{}, apperr.New(api.CodeNotFound, "no webhook %q", name)
	}
	return e, err
}

// List returns up to limit endpoints ordered by name, after the name `after`.
func (s *Store) List(ctx context.Context, tenantID, after string, limit int) ([]Endpoint, error) {
	var es []Endpoint
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &es, s.q.listEndpoints, tenantID, after, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return es, nil
}

// Delete removes the endpoint (NotFound if missing). Its pending deliveries fail at their
// next try.
func (s *Store) Delete(ctx context.Context, tenantID, name string) error {
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		res, err := tx.ExecContext(ctx, s.q.deleteEndpoint, tenantID, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return apperr.New(api.CodeNotFound, "no webhook %q", name)
		}
		tx.AfterCommit(func() { s.subs.forget(tenantID) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	return nil
}

// RotateSecret gives the endpoint a new secret and returns it (shown once); the old one
// still signs for SecretOverlap. NotFound if missing.
func (s *Store) RotateSecret(ctx context.Context, tenantID, name string) (Endpoint, string, error) {
	var (
		e      Endpoint
		secret = NewSecret()
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q.rotateSecret, tenantID, name, secret, tx.Dialect.Time(now), tx.Dialect.Time(now.Add(SecretOverlap)))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return apperr.New(api.CodeNotFound, "no webhook %q", name)
		}
		e, err = s.getEndpoint(ctx, tx, tenantID, name)
		return err
	})
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("rotate webhook secret: %w", err)
	}
	return e, secret, nil
}

// Delivery is one event for one endpoint.
type Delivery struct {
	TenantID       string     `db:"TenantId"`
	DeliveryID     uuid.UUID  `db:"DeliveryId"`
	EndpointName   string     `db:"EndpointName"`
	EventType      string     `db:"EventType"`
	Payload        string     `db:"Payload"`
	Status         string     `db:"Status"`
	Attempts       int        `db:"Attempts"`
	CreatedAt      time.Time  `db:"CreatedAt"`
	NextAttemptAt  time.Time  `db:"NextAttemptAt"`
	RetryUntil     time.Time  `db:"RetryUntil"`
	LastAttemptAt  *time.Time `db:"LastAttemptAt"`
	LastStatusCode *int       `db:"LastStatusCode"`
	LastError      *string    `db:"LastError"`
	DeliveredAt    *time.Time `db:"DeliveredAt"`
}

// Wire returns the delivery as the API sends it (without its payload).
func (d Delivery) Wire() api.WebhookDelivery {
	w := api.WebhookDelivery{DeliveryID: d.DeliveryID, Webhook: d.EndpointName, Event: api.WebhookEvent(d.EventType),
		Status: api.DeliveryStatus(d.Status), Attempts: d.Attempts, CreatedAt: api.NewTime(d.CreatedAt),
		LastAttemptAt: api.TimeOf(d.LastAttemptAt), LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		DeliveredAt: api.TimeOf(d.DeliveredAt)}
	if d.Status == string(api.DeliveryPending) {
		w.NextAttemptAt = api.TimeOf(&d.NextAttemptAt)
	}
	return w
}

// DeliveryFilter selects deliveries; nil fields select all.
type DeliveryFilter struct {
	Status  *api.DeliveryStatus
	Event   *api.WebhookEvent
	Webhook *string
	// Before is the position to continue from (newest first), nil for the start.
	Before *Position
	Limit  int
}

// Position is a place in the newest-first delivery listing.
type Position struct {
	CreatedAt  time.Time `json:"c"`
	DeliveryID uuid.UUID `json:"i"`
}

// Deliveries lists the tenant's deliveries newest first.
func (s *Store) Deliveries(ctx context.Context, tenantID string, f DeliveryFilter) ([]Delivery, error) {
	var ds []Delivery
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var st, ev, wh, at, id any
		if f.Status != nil {
			st = string(*f.Status)
		}
		if f.Event != nil {
			ev = string(*f.Event)
		}
		if f.Webhook != nil {
			wh = *f.Webhook
		}
		if f.Before != nil {
			at, id = tx.Dialect.Time(f.Before.CreatedAt), f.Before.DeliveryID
		}
		return tx.SelectContext(ctx, &ds, s.q.listDeliveries, tenantID, st, ev, wh, at, id, f.Limit)
	})
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return ds, nil
}

// Delivery reads one delivery (NotFound if missing or another tenant's).
func (s *Store) Delivery(ctx context.Context, tenantID string, id uuid.UUID) (Delivery, error) {
	var d Delivery
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		d, err = s.getDelivery(ctx, tx, tenantID, id)
		return err
	})
	return d, err
}

func (s *Store) getDelivery(ctx context.Context, tx *sqldb.Tx, tenantID string, id uuid.UUID) (Delivery, error) {
	var d Delivery
	err := tx.GetContext(ctx, &d, s.q.getDelivery, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Delivery{}, apperr.New(api.CodeNotFound, "no webhook delivery %s", id)
	}
	return d, err
}

// Redeliver makes a delivered or failed delivery pending again, due now and retried for
// RetryFor, with the same webhook-id. Errors: NotFound, IllegalTransition (still pending).
func (s *Store) Redeliver(ctx context.Context, tenantID string, id uuid.UUID) (Delivery, error) {
	var d Delivery
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q.redeliver, tenantID, id, tx.Dialect.Time(now), tx.Dialect.Time(now.Add(RetryFor)))
		if err != nil {
			return err
		}
		d, err = s.getDelivery(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return apperr.New(api.CodeIllegalTransition, "webhook delivery %s is still pending", id)
		}
		return nil
	})
	if err != nil {
		return Delivery{}, fmt.Errorf("redeliver: %w", err)
	}
	return d, nil
}
