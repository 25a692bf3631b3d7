// Package overview reads the live shape of the work: runs queued and leased by band and
// project, the age of the oldest due queued run (claim lag), leases lost in the last hour
// and decisions pending, for one tenant (the console's overview) or for every tenant (the
// metrics' gauges). It only reads, with aggregates that seek the live part of each table
// (queries_*.go say how), never the history.
package overview

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// LostWindow is how far back "leases lost" looks.
const LostWindow = time.Hour

// Counts is the live work of a tenant or of one of its projects.
type Counts struct {
	// Queued and Leased count runs by band (api.BandInteractive, api.BandBatch, api.BandBackground).
	// Queued leaves out the runs Waiting counts: parked runs waiting on a decision or a
	// child (DESIGN.md section 5b), which no claim is offered until their conditions close.
	Queued  [3]int64
	Leased  [3]int64
	Waiting [3]int64
	// OldestDue is the due time of the oldest queued run that is due (nil: none is).
	OldestDue *time.Time
	// LostLastHour counts attempts whose lease the reaper took back in the last hour.
	LostLastHour int64
	// PendingDecisions counts decisions waiting for an answer.
	PendingDecisions int64
}

// QueuedTotal is the number of queued runs in every band.
func (c Counts) QueuedTotal() int64 { return c.Queued[0] + c.Queued[1] + c.Queued[2] }

// WaitingTotal is the number of parked runs waiting on their conditions in every band.
func (c Counts) WaitingTotal() int64 { return c.Waiting[0] + c.Waiting[1] + c.Waiting[2] }

// LeasedTotal is the number of leased runs in every band.
func (c Counts) LeasedTotal() int64 { return c.Leased[0] + c.Leased[1] + c.Leased[2] }

// ClaimLag is how long the oldest due queued run has waited past its due time at now (0
// when none is due).
func (c Counts) ClaimLag(now time.Time) time.Duration {
	if c.OldestDue == nil || c.OldestDue.After(now) {
		return 0
	}
	return now.Sub(*c.OldestDue)
}

func (c *Counts) due(t sqldb.NullTime) {
	if t.Valid && (c.OldestDue == nil || t.Time.Before(*c.OldestDue)) {
		tt := t.Time
		c.OldestDue = &tt
	}
}

// Add adds o's counts to c; the older due time of the two stays.
func (c *Counts) Add(o Counts) {
	for b := range c.Queued {
		c.Queued[b] += o.Queued[b]
		c.Leased[b] += o.Leased[b]
		c.Waiting[b] += o.Waiting[b]
	}
	c.LostLastHour += o.LostLastHour
	c.PendingDecisions += o.PendingDecisions
	if o.OldestDue != nil {
		c.due(sqldb.NullTime{Time: *o.OldestDue, Valid: true})
	}
}

// knownBand reports whether b is one of the three bands the counts index by.
func knownBand(b int) bool { return b >= 0 && b < len(Counts{}.Queued) }

// Tenant is one tenant's overview.
type Tenant struct {
	// At is the database time the overview was read at.
	At time.Time
	// MaxLeasedRuns is the tenant's budget of leased runs.
	MaxLeasedRuns int
	Counts
	// Projects holds the same counts per project that has any, by project id.
	Projects []Project
}

// Project is one project's share of a tenant's overview.
type Project struct {
	ProjectID string
	Counts
}

// Store reads overviews.
type Store struct {
	db *sqldb.DB
	q  *queries
}

// NewStore returns the overview reader of db.
func NewStore(db *sqldb.DB) *Store { return &Store{db: db, q: queriesFor(db.Dialect)} }

type bandRow struct {
	Key       string         `db:"ProjectId"`
	Band      int            `db:"Band"`
	Runs      int64          `db:"Runs"`
	OldestDue sqldb.NullTime `db:"OldestDue"`
}

type countRow struct {
	Key  string `db:"ProjectId"`
	Runs int64  `db:"Runs"`
}

// Tenant reads the overview of one tenant, in one read transaction so its numbers agree.
// api.CodeNotFound when the tenant does not exist.
func (s *Store) Tenant(ctx context.Context, tenantID string) (Tenant, error) {
	var out Tenant
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		out.At = now
		if err := tx.GetContext(ctx, &out.MaxLeasedRuns, s.q.budget, tenantID); err != nil {
			if errors.Is(err, sqldb.ErrNotFound) {
				return apperr.New(api.CodeNotFound, "no tenant %q", tenantID)
			}
			return err
		}
		var queued, leased, waiting []bandRow
		var lost, pending []countRow
		if err := tx.SelectContext(ctx, &queued, s.q.queued, tenantID, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count queued runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &waiting, s.q.waiting, tenantID, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count waiting runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &leased, s.q.leased, tenantID); err != nil {
			return fmt.Errorf("count leased runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &lost, s.q.lost, tenantID, tx.Dialect.Time(now.Add(-LostWindow))); err != nil {
			return fmt.Errorf("count lost leases: %w", err)
		}
		if err := tx.SelectContext(ctx, &pending, s.q.pending, tenantID, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count pending decisions: %w", err)
		}
		byProject := map[string]*Project{}
		project := func(id string) *Counts {
			p, ok := byProject[id]
			if !ok {
				p = &Project{ProjectID: id}
				byProject[id] = p
			}
			return &p.Counts
		}
		for _, r := range queued {
			if knownBand(r.Band) {
				c := project(r.Key)
				c.Queued[r.Band] += r.Runs
				c.due(r.OldestDue)
			}
		}
		for _, r := range leased {
			if knownBand(r.Band) {
				project(r.Key).Leased[r.Band] += r.Runs
			}
		}
		for _, r := range waiting {
			if knownBand(r.Band) {
				c := project(r.Key)
				c.Waiting[r.Band] += r.Runs
				c.Queued[r.Band] -= r.Runs
			}
		}
		for _, r := range lost {
			project(r.Key).LostLastHour += r.Runs
		}
		for _, r := range pending {
			project(r.Key).PendingDecisions += r.Runs
		}
		// Every row names a project, so the tenant's counts are its projects' sum.
		for _, p := range byProject {
			out.Counts.Add(p.Counts)
			out.Projects = append(out.Projects, *p)
		}
		sort.Slice(out.Projects, func(i, j int) bool { return out.Projects[i].ProjectID < out.Projects[j].ProjectID })
		return nil
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("read overview: %w", err)
	}
	return out, nil
}

// All is every tenant's live counts at one time (leases lost are not read: the metrics
// count them as they happen).
type All struct {
	At      time.Time
	Tenants map[string]*Counts
}

type tenantBandRow struct {
	TenantID  string         `db:"TenantId"`
	Band      int            `db:"Band"`
	Runs      int64          `db:"Runs"`
	OldestDue sqldb.NullTime `db:"OldestDue"`
}

type tenantCountRow struct {
	TenantID string `db:"TenantId"`
	Runs     int64  `db:"Runs"`
}

// AllTenants reads the live counts of every tenant, with the maintenance scope: it is the
// service's own reading for its metrics, never a request's.
func (s *Store) AllTenants(ctx context.Context) (All, error) {
	out := All{Tenants: map[string]*Counts{}}
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		out.At = now
		var queued, leased, waiting []tenantBandRow
		var pending []tenantCountRow
		if err := tx.SelectContext(ctx, &queued, s.q.allQueued, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count queued runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &waiting, s.q.allWaiting, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count waiting runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &leased, s.q.allLeased); err != nil {
			return fmt.Errorf("count leased runs: %w", err)
		}
		if err := tx.SelectContext(ctx, &pending, s.q.allPending, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("count pending decisions: %w", err)
		}
		tenant := func(id string) *Counts {
			c, ok := out.Tenants[id]
			if !ok {
				c = &Counts{}
				out.Tenants[id] = c
			}
			return c
		}
		for _, r := range queued {
			if knownBand(r.Band) {
				c := tenant(r.TenantID)
				c.Queued[r.Band] += r.Runs
				c.due(r.OldestDue)
			}
		}
		for _, r := range leased {
			if knownBand(r.Band) {
				tenant(r.TenantID).Leased[r.Band] += r.Runs
			}
		}
		for _, r := range waiting {
			if knownBand(r.Band) {
				c := tenant(r.TenantID)
				c.Waiting[r.Band] += r.Runs
				c.Queued[r.Band] -= r.Runs
			}
		}
		for _, r := range pending {
			tenant(r.TenantID).PendingDecisions += r.Runs
		}
		return nil
	})
	if err != nil {
		return All{}, fmt.Errorf("read every tenant's overview: %w", err)
	}
	return out, nil
}

// BandName is the wire name of band i.
func BandName(i int) string { return api.Band(i).String() }
