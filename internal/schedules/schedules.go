// Package schedules keeps schedules (DESIGN.md 5b): recurring work, a run enqueued at every
// firing of a cron expression in a time zone, and the scheduler every replica runs to fire
// them, with no leader, exactly one run per firing.
package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// LastFirings is how many of a schedule's newest firings an answer shows.
const LastFirings = 10

// Schedule is one schedule of a tenant with its firing state.
type Schedule struct {
	TenantID       string           `db:"TenantId"`
	ScheduleID     string           `db:"ScheduleId"`
	Cron           string           `db:"Cron"`
	Timezone       string           `db:"Timezone"`
	RunSpec        string           `db:"RunSpec"`
	Overlap        string           `db:"Overlap"`
	CatchupSeconds int              `db:"CatchupSeconds"`
	Paused         bool             `db:"Paused"`
	Description    *string          `db:"Description"`
	CreatedAt      time.Time        `db:"CreatedAt"`
	UpdatedAt      time.Time        `db:"UpdatedAt"`
	UpdatedBy      string           `db:"UpdatedBy"`
	Version        sqldb.RowVersion `db:"Version"`
	NextFireAt     *time.Time       `db:"NextFireAt"`
	LastFireAt     *time.Time       `db:"LastFireAt"`
	LastRunID      uuid.NullUUID    `db:"LastRunId"`
	Fired          int64            `db:"Fired"`
	SkippedOverlap int64            `db:"SkippedOverlap"`
	SkippedCatchup int64            `db:"SkippedCatchup"`

	// Firings are the newest firings (filled by Get, Put and List).
	Firings []Firing `db:"-"`
}

// Firing is one firing and the run it enqueued.
type Firing struct {
	FireAt time.Time
	RunID  uuid.UUID
}

// Wire returns the schedule as the API sends it.
func (s Schedule) Wire() api.Schedule {
	var spec api.RunSpec
	_ = json.Unmarshal([]byte(s.RunSpec), &spec) // written by Put from a validated spec
	w := api.Schedule{ScheduleID: s.ScheduleID, Cron: s.Cron, Timezone: s.Timezone, Run: spec,
		Overlap: api.ScheduleOverlap(s.Overlap), CatchupSeconds: s.CatchupSeconds, Paused: s.Paused, Description: s.Description,
		NextFireAt: api.TimeOf(s.NextFireAt), LastFirings: []api.ScheduleFiring{}, Fired: s.Fired,
		SkippedOverlap: s.SkippedOverlap, SkippedCatchup: s.SkippedCatchup,
		CreatedAt: api.NewTime(s.CreatedAt), UpdatedAt: api.NewTime(s.UpdatedAt)}
	for _, f := range s.Firings {
		w.LastFirings = append(w.LastFirings, api.ScheduleFiring{FireAt: api.NewTime(f.FireAt), RunID: f.RunID})
	}
	return w
}

// Item is the schedule as a listing shows it: its wire form and its ETag.
func (s Schedule) Item() api.ScheduleItem {
	return api.ScheduleItem{Schedule: s.Wire(), ETag: s.Version.ETag()}
}

// KeyPrefix is what the idempotency key of every firing of schedule id starts with.
func KeyPrefix(id string) string { return "schedule:" + id + ":" }

// FiringKey is the idempotency key of the firing of schedule id at fireAt: one run per
// firing, whichever replica fires it and however often.
func FiringKey(id string, fireAt time.Time) string {
	return KeyPrefix(id) + fireAt.UTC().Format(sqldb.TimeLayout)
}

// Change is a create or an update: the whole schedule as validated.
type Change struct {
	Cron           string
	Timezone       string
	Run            api.RunSpec
	Overlap        api.ScheduleOverlap
	CatchupSeconds int
	Paused         bool
	Description    *string
	// KeyID is the key making the change; the runs the schedule fires name it as creator.
	KeyID string
	// IfMatch, when set, is the condition (If-Match) the current version must meet.
	IfMatch sqldb.VersionMatcher
}

// ChangeOf validates a PUT body and fills the defaults of absent members. The run is
// checked as an enqueue is (the binding validated its members; here what a schedule adds:
// no idempotencyKey, dueAt or deadlineAt), and the cron expression and time zone are
// parsed; every refusal names its field (run.field for the run's).
func ChangeOf(req api.PutScheduleRequest) (Change, error) {
	ch := Change{Cron: req.Cron, Timezone: api.DefaultScheduleTimezone, Run: req.Run, Overlap: api.DefaultScheduleOverlap,
		CatchupSeconds: api.DefaultCatchupSeconds, Description: req.Description}
	if req.Timezone != nil {
		ch.Timezone = *req.Timezone
	}
	if req.Overlap != nil {
		ch.Overlap = *req.Overlap
	}
	if req.CatchupSeconds != nil {
		ch.CatchupSeconds = *req.CatchupSeconds
	}
	if req.Paused != nil {
		ch.Paused = *req.Paused
	}
	_, errs := ParseCron(ch.Cron, ch.Timezone)
	if req.Run.IdempotencyKey != nil {
		errs = append(errs, api.FieldError{Field: "run.idempotencyKey", Reason: "must be absent: each firing's key is schedule:{scheduleId}:{fire time}"})
	}
	if req.Run.DueAt != nil {
		errs = append(errs, api.FieldError{Field: "run.dueAt", Reason: "must be absent: a firing's run is due at once"})
	}
	if req.Run.DeadlineAt != nil {
		errs = append(errs, api.FieldError{Field: "run.deadlineAt", Reason: "must be absent: an absolute time does not recur"})
	}
	if len(errs) > 0 {
		return Change{}, apperr.FieldsInvalid(errs...)
	}
	return ch, nil
}

// Store keeps schedules.
type Store struct {
	db   *sqldb.DB
	q    *queries
	runs *runs.Service
}

// NewStore returns the schedule store of db; rs enqueues the runs the schedules fire.
func NewStore(db *sqldb.DB, rs *runs.Service) *Store {
	return &Store{db: db, q: queriesFor(db.Dialect), runs: rs}
}

// PutIfMatch is when Put needs an If-Match condition: to update, not to create.
const PutIfMatch = ifmatch.ToUpdate

// Put creates the schedule (no IfMatch; its first firing is the first after now unless
// paused) or replaces it (IfMatch required). An update that changes the cron expression or
// the time zone, or resumes the schedule, starts its firings after now: nothing missed is
// back-filled. The run's project must exist (422 unknown_project).
func (s *Store) Put(ctx context.Context, tenantID, id string, ch Change) (Schedule, bool, error) {
	cr, errs := ParseCron(ch.Cron, ch.Timezone)
	if errs != nil {
		return Schedule{}, false, apperr.FieldsInvalid(errs...)
	}
	spec, err := json.Marshal(ch.Run)
	if err != nil {
		return Schedule{}, false, fmt.Errorf("encode run spec: %w", err)
	}
	var (
		out     Schedule
		created bool
	)
	what := fmt.Sprintf("schedule %q", id)
	err = s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		next := func() any {
			if ch.Paused {
				return nil
			}
			n := cr.Next(now)
			return tx.Dialect.NullTime(&n)
		}
		var description any // free text, never compared
		if ch.Description != nil {
			description = tx.Dialect.Text(*ch.Description)
		}
		args := []any{tenantID, id, ch.Cron, ch.Timezone, tx.Dialect.Text(string(spec)), string(ch.Overlap), ch.CatchupSeconds,
			ch.Paused, description, tx.Dialect.Time(now), ch.KeyID}
		cur, err := s.get(ctx, tx, tenantID, id)
		switch {
		case apperr.Is(err, api.CodeNotFound):
			if err := ifmatch.Create(ch.IfMatch, what); err != nil {
				return err
			}
			if err := s.checkProject(ctx, tx, tenantID, ch.Run.ProjectID); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, s.q.insert, args...)
			if sqldb.IsConflict(err) {
				if err := ifmatch.Update(PutIfMatch, nil, 0, what); err != nil {
					return err
				}
				return fmt.Errorf("%s was created meanwhile: %w", what, sqldb.ErrRetryable)
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q.insertState, tenantID, id, next()); err != nil {
				return err
			}
			created = true
		case err != nil:
			return err
		default:
			if err := ifmatch.Update(PutIfMatch, ch.IfMatch, cur.Version, what); err != nil {
				return err
			}
			if err := s.checkProject(ctx, tx, tenantID, ch.Run.ProjectID); err != nil {
				return err
			}
			// The state row first, then the schedule's, as a firing (state only) and Delete
			// (state, then schedule) take them; the conditional update below refuses a
			// schedule changed since cur was read, and the whole write rolls back.
			if ch.Paused != cur.Paused || ch.Cron != cur.Cron || ch.Timezone != cur.Timezone {
				if _, err := tx.ExecContext(ctx, s.q.reschedule, tenantID, id, next()); err != nil {
					return err
				}
			}
			res, err := tx.ExecContext(ctx, s.q.update, append(args, tx.Dialect.Version(cur.Version))...)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return ifmatch.Stale(what)
			}
		}
		out, err = s.get(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		out.Firings, err = s.firings(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return Schedule{}, false, fmt.Errorf("put schedule: %w", err)
	}
	return out, created, nil
}

// checkProject refuses a run whose project is not the tenant's, as an enqueue would; the
// firing itself checks again (the foreign key), for a project that goes later.
func (s *Store) checkProject(ctx context.Context, tx *sqldb.Tx, tenantID, projectID string) error {
	var n int
	if err := tx.GetContext(ctx, &n, s.q.project, tenantID, projectID); err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(api.CodeUnknownProject, "project %q does not exist", projectID)
	}
	return nil
}

// Get reads one schedule with its newest firings (NotFound if missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID, id string) (Schedule, error) {
	var sc Schedule
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		if sc, err = s.get(ctx, tx, tenantID, id); err != nil {
			return err
		}
		sc.Firings, err = s.firings(ctx, tx, tenantID, id)
		return err
	})
	return sc, err
}

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, tenantID, id string) (Schedule, error) {
	var sc Schedule
	err := tx.GetContext(ctx, &sc, s.q.get, tenantID, id)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Schedule{}, apperr.New(api.CodeNotFound, "no schedule %q", id)
	}
	return sc, err
}

type firingRow struct {
	RunID uuid.UUID `db:"RunId"`
	Key   string    `db:"IdempotencyKey"`
}

// firings reads the schedule's newest firings from its runs' idempotency keys: the key
// names the schedule and the fire time, so no second record is kept.
func (s *Store) firings(ctx context.Context, tx *sqldb.Tx, tenantID, id string) ([]Firing, error) {
	prefix := KeyPrefix(id)
	upper := strings.TrimSuffix(prefix, ":") + ";"
	var rows []firingRow
	if err := tx.SelectContext(ctx, &rows, s.q.firings, tenantID, prefix, upper, LastFirings); err != nil {
		return nil, fmt.Errorf("read firings: %w", err)
	}
	out := make([]Firing, 0, len(rows))
	for _, r := range rows {
		at, err := time.Parse(sqldb.TimeLayout, strings.TrimPrefix(r.Key, prefix))
		if err != nil {
			continue // a key under the prefix that no firing made
		}
		out = append(out, Firing{FireAt: at, RunID: r.RunID})
	}
	return out, nil
}

// List returns up to limit schedules ordered by id, after the id `after` ("" for the
// start), each with its newest firings.
func (s *Store) List(ctx context.Context, tenantID, after string, limit int) ([]Schedule, error) {
	var out []Schedule
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		if err := tx.SelectContext(ctx, &out, s.q.list, tenantID, after, limit); err != nil {
			return err
		}
		for i := range out {
			var err error
			if out[i].Firings, err = s.firings(ctx, tx, tenantID, out[i].ScheduleID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// Delete removes the schedule (NotFound if missing); the runs it fired stay.
func (s *Store) Delete(ctx context.Context, tenantID, id string) error {
	return s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q.deleteState, tenantID, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q.delete, tenantID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return apperr.New(api.CodeNotFound, "no schedule %q", id)
		}
		return nil
	})
}

// CheckID refuses a schedule id with ":" (the firing keys are schedule:{id}:{time}: an id
// with ":" would share its key prefix with another schedule's); the path's identifier rule
// is checked by the route.
func CheckID(id string) error {
	if strings.Contains(id, ":") {
		return apperr.FieldsInvalid(api.FieldError{Field: "scheduleId", Reason: `must not contain ":"`})
	}
	return nil
}
