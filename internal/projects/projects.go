// Package projects keeps a tenant's projects (the runs' workspaces): whether they are
// active, so their runs are offered to claims, and how long their history is kept.
package projects

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Project is one project of a tenant.
type Project struct {
	TenantID      string           `db:"TenantId"`
	ProjectID     string           `db:"ProjectId"`
	Active        bool             `db:"Active"`
	RetentionDays int              `db:"RetentionDays"`
	LeasedCount   int              `db:"LeasedCount"`
	CreatedAt     time.Time        `db:"CreatedAt"`
	UpdatedAt     time.Time        `db:"UpdatedAt"`
	Version       sqldb.RowVersion `db:"Version"`
	// DailyCostBudgetMicros is the daily cost budget (nil: none); CostTodayMicros the cost
	// recorded since 00:00 UTC of the reading transaction's day.
	DailyCostBudgetMicros *int64 `db:"DailyCostBudgetMicros"`
	CostTodayMicros       int64  `db:"CostTodayMicros"`
}

// CostHeld says the project's runs are held from claims for the rest of the day.
func (p Project) CostHeld() bool {
	return p.DailyCostBudgetMicros != nil && p.CostTodayMicros >= *p.DailyCostBudgetMicros
}

// Item is the project as a listing shows it: its wire form and its ETag.
func (p Project) Item() api.ProjectItem {
	return api.ProjectItem{Project: p.Wire(), ETag: p.Version.ETag()}
}

// Wire returns the project as the API sends it.
func (p Project) Wire() api.Project {
	return api.Project{ProjectID: p.ProjectID, Active: p.Active, RetentionDays: p.RetentionDays,
		LeasedCount: p.LeasedCount, CreatedAt: api.NewTime(p.CreatedAt), UpdatedAt: api.NewTime(p.UpdatedAt),
		DailyCostBudgetMicros: p.DailyCostBudgetMicros, CostTodayMicros: p.CostTodayMicros, CostHeld: p.CostHeld()}
}

// Change is a create or an update. Nil fields keep their value (or take the default on create).
type Change struct {
	Active        *bool
	RetentionDays *int
	// SetBudget says the change sets DailyCostBudgetMicros (nil: removes the budget).
	SetBudget             bool
	DailyCostBudgetMicros *int64
	// IfMatch, when set, is the condition (If-Match) the current version must meet.
	IfMatch sqldb.VersionMatcher
}

// Store keeps projects.
type Store struct {
	db *sqldb.DB
	q  *queries
}

// NewStore returns the project store of db.
func NewStore(db *sqldb.DB) *Store { return &Store{db: db, q: queriesFor(db.Dialect)} }

// PutIfMatch is when Put needs an If-Match condition: to update, not to create. The route's
// Op declares it and Put applies it (ifmatch.Update), so the two cannot disagree.
const PutIfMatch = ifmatch.ToUpdate

// Put creates the project (no IfMatch) or updates it (IfMatch required: PutIfMatch). It
// reports whether it created. Errors: PreconditionRequired (exists, no IfMatch),
// PreconditionFailed (stale IfMatch, or IfMatch on a project that does not exist).
func (s *Store) Put(ctx context.Context, tenantID, projectID string, ch Change) (Project, bool, error) {
	var (
		p       Project
		created bool
	)
	err := s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		cur, err := s.get(ctx, tx, tenantID, projectID)
		what := fmt.Sprintf("project %q", projectID)
		switch {
		case apperr.Is(err, api.CodeNotFound):
			if err := ifmatch.Create(ch.IfMatch, what); err != nil {
				return err
			}
			active, days := true, api.DefaultRetentionDays
			if ch.Active != nil {
				active = *ch.Active
			}
			if ch.RetentionDays != nil {
				days = *ch.RetentionDays
			}
			_, err = tx.ExecContext(ctx, s.q.insert, tenantID, projectID, active, days, tx.Dialect.Time(now), ch.DailyCostBudgetMicros)
			if sqldb.IsConflict(err) {
				// Another request created it first: this one is now an update without If-Match,
				// which PutIfMatch refuses; a mode that allowed it runs the transaction again,
				// to update the row it will then find.
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
			active, days, budget := cur.Active, cur.RetentionDays, cur.DailyCostBudgetMicros
			if ch.Active != nil {
				active = *ch.Active
			}
			if ch.RetentionDays != nil {
				days = *ch.RetentionDays
			}
			if ch.SetBudget {
				budget = ch.DailyCostBudgetMicros
			}
			res, err := tx.ExecContext(ctx, s.q.update, tenantID, projectID, active, days, tx.Dialect.Time(now), tx.Dialect.Version(cur.Version), budget)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return ifmatch.Stale(what)
			}
		}
		p, err = s.get(ctx, tx, tenantID, projectID)
		return err
	})
	if err != nil {
		return Project{}, false, fmt.Errorf("put project: %w", err)
	}
	return p, created, nil
}

// Get reads one project (NotFound if missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID, projectID string) (Project, error) {
	var p Project
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		p, err = s.get(ctx, tx, tenantID, projectID)
		return err
	})
	return p, err
}

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, tenantID, projectID string) (Project, error) {
	day, err := Today(ctx, tx)
	if err != nil {
		return Project{}, err
	}
	var p Project
	err = tx.GetContext(ctx, &p, s.q.get, tenantID, projectID, day)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Project{}, apperr.New(api.CodeNotFound, "no project %q", projectID)
	}
	return p, err
}

// List returns up to limit projects ordered by id, after the id `after` ("" for the start).
func (s *Store) List(ctx context.Context, tenantID, after string, limit int) ([]Project, error) {
	var ps []Project
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		day, err := Today(ctx, tx)
		if err != nil {
			return err
		}
		return tx.SelectContext(ctx, &ps, s.q.list, tenantID, after, limit, day)
	})
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// Today is the transaction's UTC day as the cost counters key it ('YYYY-MM-DD': text on
// SQLite, converted to date by SQL Server).
func Today(ctx context.Context, tx *sqldb.Tx) (string, error) {
	now, err := tx.Now(ctx)
	if err != nil {
		return "", err
	}
	return now.UTC().Format(time.DateOnly), nil
}
