package releases

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Identifier lengths (the seed's nvarchar sizes; the claim body uses the same limits).
const (
	MaxReleaseIDLength      = 256
	MaxAdapterVersionLength = 32
)

// Routes registers the release routes. c cancels the runs of attempts still running on a
// release that is drained or retired under the cancel policy (the run-lease core:
// *runs.Service).
func Routes(s *web.Server, store *Store, c Canceller) {
	h := handlers{store: store, canceller: c}
	s.Route(http.MethodPut, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		Summary: "Register a verified release adapter (201; no If-Match), or move its state or in-flight policy (If-Match required); " +
			"an unchanged repeat answers 200. Content is immutable; a release id is global across tenants",
		Roles: []string{tenancy.RoleRuntime, tenancy.RoleAdmin}, Body: api.PutReleaseRequest{},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Release{}, ETag: true, IfMatch: true,
		// If-Match is optional for a create and an unchanged repeat, so the Op cannot say
		// IfMatchRequired; a change without one is still 428.
		Problems: []apperr.Code{apperr.ManifestMismatch, apperr.ReleaseImmutable, apperr.ReleaseConflict,
			apperr.IllegalTransition, apperr.PreconditionRequired},
	}, h.put)
	s.Route(http.MethodGet, "/v1/releases", web.Op{
		Summary: "List the tenant's releases by release id, then adapter version", Status: http.StatusOK, Response: web.Page[api.Release]{},
		Query: api.ListReleasesParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		Summary: "Read a release adapter", Status: http.StatusOK, Response: api.Release{}, ETag: true,
		Problems: []apperr.Code{apperr.NotFound},
	}, h.get)
}

type handlers struct {
	store     *Store
	canceller Canceller
}

func pathIDs(c echo.Context) (releaseID, adapterVersion string, err error) {
	releaseID, err = web.PathIdent(c, "releaseId", MaxReleaseIDLength)
	if err != nil {
		return "", "", err
	}
	adapterVersion, err = web.PathIdent(c, "adapterVersion", MaxAdapterVersionLength)
	return releaseID, adapterVersion, err
}

// Location is the path of a release adapter.
func Location(releaseID, adapterVersion string) string {
	return web.Path("v1", "releases", releaseID, "adapters", adapterVersion)
}

func (h handlers) put(c echo.Context) error {
	rid, av, err := pathIDs(c)
	if err != nil {
		return err
	}
	var body api.PutReleaseRequest
	if err := web.Bind(c, &body, false); err != nil {
		return err
	}
	refs, err := json.Marshal(body.ContentRefs)
	if err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c, false)
	if err != nil {
		return err
	}
	p := Put{ManifestHash: body.ManifestHash, ContentRefs: refs, State: *body.State, IfMatch: ifMatch}
	if body.InFlightPolicy != nil {
		policy := string(*body.InFlightPolicy)
		p.InFlightPolicy = &policy
	}
	r, created, err := h.store.Put(c.Request().Context(), h.canceller, tenancy.MustPrincipal(c).TenantID, rid, av, p)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, Location(rid, av), r.Version, r.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, r.Version, r.Wire())
}

func (h handlers) get(c echo.Context) error {
	rid, av, err := pathIDs(c)
	if err != nil {
		return err
	}
	r, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, rid, av)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, r.Version, r.Wire())
}

type cursor struct {
	ReleaseID      string `json:"r"`
	AdapterVersion string `json:"a"`
}

func (h handlers) list(c echo.Context) error {
	var q api.ListReleasesParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	f := ListFilter{Limit: limit + 1, State: q.State}
	var cur cursor
	if _, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	}
	f.AfterReleaseID, f.AfterAdapterVersion = cur.ReleaseID, cur.AdapterVersion
	rs, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, web.MapPage(web.NewPage(rs, limit, func(last Release) any {
		return cursor{ReleaseID: last.ReleaseID, AdapterVersion: last.AdapterVersion}
	}), Release.Wire))
}
