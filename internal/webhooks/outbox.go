package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// subscriptions is a replica's cache of each tenant's active endpoints and their events.
// Why a cache and not one indexed probe per event: the events fire inside the busiest
// transactions (every run's end, every attempt's end), and a tenant without webhooks, the
// common case, must pay nothing there; the cache costs a probe per tenant per TTL. Its
// price: an endpoint created or changed on another replica is seen there up to the TTL
// later (this replica forgets the tenant's entry when it writes an endpoint itself).
type subscriptions struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]subEntry
}

type subEntry struct {
	at        time.Time
	endpoints []subscribed
}

type subscribed struct {
	Name   string `db:"Name"`
	Events string `db:"Events"`
}

func newSubscriptions(ttl time.Duration) *subscriptions {
	return &subscriptions{ttl: ttl, m: map[string]subEntry{}}
}

func (c *subscriptions) forget(tenantID string) {
	c.mu.Lock()
	delete(c.m, tenantID)
	c.mu.Unlock()
}

// endpointsFor returns the names of the tenant's active endpoints subscribed to ev.
func (s *Store) endpointsFor(ctx context.Context, tx *sqldb.Tx, tenantID string, ev api.WebhookEvent) ([]string, error) {
	c := s.subs
	c.mu.Lock()
	e, ok := c.m[tenantID]
	c.mu.Unlock()
	if !ok || c.ttl < 0 || time.Since(e.at) > c.ttl {
		var rows []subscribed
		if err := tx.SelectContext(ctx, &rows, s.q.subscribed, tenantID, MaxEndpoints); err != nil {
			return nil, fmt.Errorf("read webhook subscriptions: %w", err)
		}
		e = subEntry{at: time.Now(), endpoints: rows}
		if c.ttl >= 0 {
			c.mu.Lock()
			c.m[tenantID] = e
			c.mu.Unlock()
		}
	}
	var out []string
	for _, sub := range e.endpoints {
		if slices.Contains(parseEvents(sub.Events), ev) {
			out = append(out, sub.Name)
		}
	}
	return out, nil
}

// Wants reports whether an endpoint of the tenant listens to ev (decisions.Notifier).
func (s *Store) Wants(ctx context.Context, tx *sqldb.Tx, tenantID string, ev api.WebhookEvent) (bool, error) {
	names, err := s.endpointsFor(ctx, tx, tenantID, ev)
	return len(names) > 0, err
}

// envelope is a delivery's body, as Standard Webhooks suggests: type, timestamp, data.
type envelope struct {
	Type      api.WebhookEvent `json:"type"`
	Timestamp api.Time         `json:"timestamp"`
	Data      any              `json:"data"`
}

// Emit writes, in tx, one pending delivery of ev for each active endpoint of the tenant
// subscribed to it. data must carry only tenant-visible fields: never run input, answers
// or secrets. It is the one way an event enters the outbox.
func (s *Store) Emit(ctx context.Context, tx *sqldb.Tx, tenantID string, ev api.WebhookEvent, data any) error {
	names, err := s.endpointsFor(ctx, tx, tenantID, ev)
	if err != nil || len(names) == 0 {
		return err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(envelope{Type: ev, Timestamp: api.NewTime(now), Data: data})
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev, err)
	}
	for _, name := range names {
		_, err := tx.ExecContext(ctx, s.q.insertDelivery, tenantID, tx.Dialect.NewID(), name, string(ev),
			tx.Dialect.JSON(string(body)), tx.Dialect.Time(now), tx.Dialect.Time(now.Add(RetryFor)))
		if err != nil {
			return fmt.Errorf("write %s delivery: %w", ev, err)
		}
	}
	return nil
}

// link is the console page of a resource.
func (s *Store) link(parts ...string) string {
	p := "/ui"
	for _, part := range parts {
		p += "/" + url.PathEscape(part)
	}
	return s.cfg.ConsoleURL + p
}

// RunEvent is the data of run.ended.
type RunEvent struct {
	RunID      uuid.UUID       `json:"runId"`
	ProjectID  string          `json:"projectId"`
	Subject    string          `json:"subject"`
	Kind       string          `json:"kind"`
	AgentID    string          `json:"agentId"`
	Outcome    *api.RunOutcome `json:"outcome,omitempty"`
	ErrorCode  *string         `json:"errorCode,omitempty"`
	Attempt    int             `json:"attempt"`
	EndedAt    *api.Time       `json:"endedAt,omitempty"`
	ConsoleURL string          `json:"consoleUrl"`
}

// AttemptEvent is the data of attempt.lost.
type AttemptEvent struct {
	AttemptID  uuid.UUID `json:"attemptId"`
	RunID      uuid.UUID `json:"runId"`
	ProjectID  string    `json:"projectId"`
	AgentID    string    `json:"agentId"`
	State      string    `json:"state"`
	EndedAt    *api.Time `json:"endedAt,omitempty"`
	ConsoleURL string    `json:"consoleUrl"`
}

// DecisionEvent is the data of decision.requested and decision.closed: never the options'
// content, the recommendation or the answer, which may hold what the run works on.
type DecisionEvent struct {
	DecisionID uuid.UUID          `json:"decisionId"`
	AttemptID  uuid.UUID          `json:"attemptId"`
	RunID      uuid.UUID          `json:"runId"`
	ProjectID  string             `json:"projectId"`
	Subject    *string            `json:"subject,omitempty"`
	AgentID    string             `json:"agentId"`
	Kind       api.DecisionKind   `json:"kind"`
	Status     api.DecisionStatus `json:"status"`
	ExpiresAt  *api.Time          `json:"expiresAt,omitempty"`
	AnsweredAt *api.Time          `json:"answeredAt,omitempty"`
	ConsoleURL string             `json:"consoleUrl"`
}

func (s *Store) decisionEvent(d decisions.Decision) DecisionEvent {
	return DecisionEvent{DecisionID: d.DecisionID, AttemptID: d.AttemptID, RunID: d.RunID, ProjectID: d.ProjectID,
		Subject: d.Subject, AgentID: d.AgentID, Kind: d.Kind, Status: d.Status, ExpiresAt: api.TimeOf(d.ExpiresAt),
		AnsweredAt: api.TimeOf(d.AnsweredAt), ConsoleURL: s.link("decisions", d.DecisionID.String())}
}

// DecisionRequested writes decision.requested (decisions.Notifier).
func (s *Store) DecisionRequested(ctx context.Context, tx *sqldb.Tx, d decisions.Decision) error {
	return s.Emit(ctx, tx, d.TenantID, api.EventDecisionRequested, s.decisionEvent(d))
}

// DecisionClosed writes decision.closed (decisions.Notifier).
func (s *Store) DecisionClosed(ctx context.Context, tx *sqldb.Tx, d decisions.Decision) error {
	return s.Emit(ctx, tx, d.TenantID, api.EventDecisionClosed, s.decisionEvent(d))
}

// RunHooks write run.ended when a run ends and attempt.lost when an attempt is lost, in
// the run-lease core's transactions (runs does not import this package).
func (s *Store) RunHooks() runs.Hooks {
	return runs.Hooks{
		RunChanged: func(ctx context.Context, tx *sqldb.Tx, r runs.Run) error {
			if r.State != api.RunEnded {
				return nil
			}
			return s.Emit(ctx, tx, r.TenantID, api.EventRunEnded, RunEvent{RunID: r.RunID, ProjectID: r.ProjectID,
				Subject: r.Subject, Kind: r.Kind, AgentID: r.AgentID, Outcome: r.Outcome, ErrorCode: r.ErrorCode,
				Attempt: r.Attempt, EndedAt: api.TimeOf(r.EndedAt), ConsoleURL: s.link("runs", r.RunID.String())})
		},
		AttemptEnded: func(ctx context.Context, tx *sqldb.Tx, tenantID string, attemptID uuid.UUID, _ time.Time) error {
			if ok, err := s.Wants(ctx, tx, tenantID, api.EventAttemptLost); err != nil || !ok {
				return err
			}
			a, err := attempts.Get(ctx, tx, tenantID, attemptID)
			if err != nil || a.State != api.AttemptLost {
				return err
			}
			return s.Emit(ctx, tx, tenantID, api.EventAttemptLost, AttemptEvent{AttemptID: a.AttemptID, RunID: a.RunID,
				ProjectID: a.ProjectID, AgentID: a.AgentID, State: a.State.String(), EndedAt: api.TimeOf(a.EndedAt),
				ConsoleURL: s.link("attempts", a.AttemptID.String())})
		},
	}
}

// BudgetEvent is the data of budget.held: a project's calls reached its daily cost budget,
// so claims of its runs are held until 00:00 UTC (Day's end) or a higher budget.
type BudgetEvent struct {
	ProjectID    string `json:"projectId"`
	Day          string `json:"day"`
	CostMicros   int64  `json:"costMicros"`
	BudgetMicros int64  `json:"budgetMicros"`
	ConsoleURL   string `json:"consoleUrl"`
}

// BudgetHeld is the calls store's OnBudgetHeld hook: budget.held joins the outbox in the
// transaction of the finish that reached the budget (once per project, day and budget).
func (s *Store) BudgetHeld(ctx context.Context, tx *sqldb.Tx, h calls.BudgetHeld) error {
	return s.Emit(ctx, tx, h.TenantID, api.EventBudgetHeld, BudgetEvent{ProjectID: h.ProjectID, Day: h.Day,
		CostMicros: h.CostMicros, BudgetMicros: h.BudgetMicros, ConsoleURL: s.link("projects", h.ProjectID)})
}
