package projects

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the project routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	s.Route(http.MethodPut, "/v1/projects/:projectId", web.Op{
		ID: "putProject", Tag: "Projects", Summary: "Create or update a project",
		Description: "Creates the project (201 with Location; no If-Match; absent members take their defaults) or updates it " +
			"(200; If-Match required: 428 without it, 412 when stale; absent members keep their values). The body is optional.",
		Roles: []string{tenancy.RoleAdmin}, Body: api.PutProjectRequest{}, BodyOptional: true,
		Example: api.PutProjectRequest{Active: api.Ptr(true), RetentionDays: api.Ptr(90), DailyCostBudgetMicros: api.Ptr(int64(25_000_000))},
		Status:  http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Project{}, ETag: true, IfMatch: PutIfMatch,
	}, h.put)
	s.Route(http.MethodGet, "/v1/projects", web.Op{
		ID: "listProjects", Tag: "Projects", Summary: "List the tenant's projects", Status: http.StatusOK, Response: api.Page[api.ProjectItem]{},
		Query: api.PageParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/projects/:projectId", web.Op{
		ID: "getProject", Tag: "Projects", Summary: "Read a project", Status: http.StatusOK, Response: api.Project{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
}

type handlers struct{ store *Store }

func (h handlers) put(c echo.Context) error {
	id, err := web.PathIdent(c, "projectId")
	if err != nil {
		return err
	}
	var req api.PutProjectRequest
	present, err := web.BindPresent(c, &req, true)
	if err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c)
	if err != nil {
		return err
	}
	ch := Change{Active: req.Active, RetentionDays: req.RetentionDays, IfMatch: ifMatch,
		SetBudget: present["dailyCostBudgetMicros"], DailyCostBudgetMicros: req.DailyCostBudgetMicros}
	p, created, err := h.store.Put(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, ch)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "projects", id), p.Version, p.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, p.Version, p.Wire())
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathIdent(c, "projectId")
	if err != nil {
		return err
	}
	p, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, p.Version, p.Wire())
}

type cursor struct {
	After string `json:"a"`
}

func (h handlers) list(c echo.Context) error {
	var q api.PageParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q)
	var cur cursor
	if _, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	}
	ps, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, cur.After, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, ps, limit, func(last Project) any {
		return cursor{After: last.ProjectID}
	}, Project.Item)
}
