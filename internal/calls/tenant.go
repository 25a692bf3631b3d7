package calls

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// TenantFilter narrows a listing of the tenant's calls (ListTenant). Nil fields do not
// filter.
type TenantFilter struct {
	// Ended lists the calls finished in [From, To), newest end first; otherwise the calls
	// started in it, newest start first.
	Ended    bool
	From, To *time.Time
	Target   *string
	Model    *string
	// HasModel true keeps the calls that named a model, false those that did not (the usage
	// insight's "(no model)" row).
	HasModel *bool
	// NotTargets and NotModels leave out the calls of these targets and models (a call
	// without a model is kept): the calls and usage insights' "other" rows.
	NotTargets, NotModels []string
	// ReportedUsage keeps the calls whose finish reported a count or a cost above zero.
	ReportedUsage bool
	// ProjectID, AgentID, ReleaseID (the attempt's) and Kind (its run's) filter as the
	// insights filter calls.
	ProjectID, AgentID, ReleaseID, Kind *string
	// After continues a listing after this call.
	After *TenantCursor
	Limit int
}

// TenantCursor is a position in a listing of the tenant's calls: the last call returned
// (its StartedAt, or its EndedAt in a listing by end).
type TenantCursor struct {
	At     time.Time
	CallID uuid.UUID
}

// Item is a call in the tenant's listing, with its entity tag.
func (c Call) Item() api.CallItem { return api.CallItem{Call: c.Wire(), ETag: c.Version.ETag()} }

// ListTenant returns up to f.Limit of the tenant's calls started (or, f.Ended, finished) in
// f's window, newest first: the rows the calls insight (by start) and the usage insight (by
// end, with ReportedUsage) count.
func (s *Store) ListTenant(ctx context.Context, tenantID string, f TenantFilter) ([]Call, error) {
	var after *time.Time
	var afterID uuid.UUID
	if f.After != nil {
		after, afterID = &f.After.At, f.After.CallID
	}
	from, at, id := sqldb.KeyRange(f.From, f.To, after, afterID)
	reported := 0
	if f.ReportedUsage {
		reported = 1
	}
	var out []Call
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		q := queriesFor(tx.Dialect)
		stmt := q.listByStarted
		if f.Ended {
			stmt = q.listByEnded
		}
		d := tx.Dialect
		return tx.SelectContext(ctx, &out, stmt, tenantID, d.Time(from), d.Time(at), id, f.Limit, f.Target, f.Model,
			reported, f.ProjectID, f.AgentID, f.ReleaseID, f.Kind, sqldb.OptionalBit(f.HasModel),
			sqldb.JSONList(d, f.NotTargets), sqldb.JSONList(d, f.NotModels))
	})
	if err != nil {
		return nil, fmt.Errorf("list the tenant's calls: %w", err)
	}
	return out, nil
}

// tenantCursor is the keyset of a listing of the tenant's calls; Ended says which listing
// made it, so a cursor continues only its own.
type tenantCursor struct {
	At    time.Time `json:"t"`
	ID    uuid.UUID `json:"i"`
	Ended bool      `json:"e,omitempty"`
}

func (h handlers) listTenant(c echo.Context) error {
	var q api.ListTenantCallsParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	f := TenantFilter{Limit: limit + 1, Target: q.Target, Model: q.Model, ReportedUsage: q.ReportedUsage != nil && *q.ReportedUsage,
		ProjectID: q.ProjectID, AgentID: q.AgentID, ReleaseID: q.ReleaseID, Kind: q.Kind, HasModel: q.HasModel,
		NotTargets: q.NotTarget, NotModels: q.NotModel}
	if q.Model != nil && q.HasModel != nil && !*q.HasModel {
		return apperr.FieldsInvalid(api.FieldError{Field: "hasModel", Reason: "must not be false with model"})
	}
	from, to, fromName, toName := q.StartedFrom, q.StartedTo, "startedFrom", "startedTo"
	if q.EndedFrom != nil || q.EndedTo != nil {
		var bad []api.FieldError
		for _, name := range []string{"startedFrom", "startedTo"} {
			if c.QueryParam(name) != "" {
				bad = append(bad, api.FieldError{Field: name, Reason: "cannot be combined with endedFrom or endedTo"})
			}
		}
		if len(bad) > 0 {
			return apperr.FieldsInvalid(bad...)
		}
		f.Ended, from, to, fromName, toName = true, q.EndedFrom, q.EndedTo, "endedFrom", "endedTo"
	}
	if from != nil {
		f.From = &from.Time
	}
	if to != nil {
		f.To = &to.Time
	}
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		return apperr.FieldsInvalid(api.FieldError{Field: toName, Reason: "must not be before " + fromName})
	}
	var cur tenantCursor
	if ok, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	} else if ok {
		if cur.Ended != f.Ended {
			return apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "continues a listing by the other time (startedFrom/startedTo or endedFrom/endedTo)"})
		}
		f.After = &TenantCursor{At: cur.At, CallID: cur.ID}
	}
	cs, err := h.store.ListTenant(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return web.WritePage(c, cs, limit, func(last Call) any {
		at := last.StartedAt
		if f.Ended {
			at = *last.EndedAt
		}
		return tenantCursor{At: at, ID: last.CallID, Ended: f.Ended}
	}, Call.Item)
}
