package releases

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Identifier lengths (the seed's nvarchar sizes; the claim body uses the same limits).
const (
	MaxReleaseIDLength      = 256
	MaxAdapterVersionLength = 32
)

// PutBody is the body of PUT /v1/releases/{releaseId}/adapters/{adapterVersion}
// (DESIGN.md section 7a).
type PutBody struct {
	// ManifestHash is the lowercase hex SHA-256 of the RFC 8785 canonical form of ContentRefs.
	ManifestHash string `json:"manifestHash" validate:"required,len=64,hexadecimal"`
	// ContentRefs is a JSON array (checked by the store, which canonicalizes it).
	ContentRefs    json.RawMessage `json:"contentRefs" validate:"required"`
	State          string          `json:"state" validate:"required,oneof=verified active draining retired" enum:"verified,active,draining,retired"`
	InFlightPolicy *string         `json:"inFlightPolicy" validate:"omitempty,oneof=drain cancel" enum:"drain,cancel"`
}

// Routes registers the release routes. c cancels the runs of attempts still running on a
// release that is drained or retired under the cancel policy (the run-lease core:
// *runs.Service).
func Routes(s *web.Server, store *Store, c Canceller) {
	h := handlers{store: store, canceller: c}
	s.Route(http.MethodPut, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		Summary: "Register a verified release adapter (201; no If-Match), or move its state or in-flight policy (If-Match required); " +
			"an unchanged repeat answers 200. Content is immutable; a release id is global across tenants",
		Roles: []string{tenancy.RoleRuntime, tenancy.RoleAdmin}, Body: PutBody{},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: Release{}, ETag: true, IfMatch: true,
		// If-Match is optional for a create and an unchanged repeat, so the Op cannot say
		// IfMatchRequired; a change without one is still 428.
		Problems: []apperr.Code{apperr.ManifestMismatch, apperr.ReleaseImmutable, apperr.ReleaseConflict,
			apperr.IllegalTransition, apperr.PreconditionRequired},
	}, h.put)
	s.Route(http.MethodGet, "/v1/releases", web.Op{
		Summary: "List the tenant's releases by release id, then adapter version", Status: http.StatusOK, Response: web.Page[Release]{},
		Query: []web.Param{{Name: "state", Type: "string", Description: "verified, active, draining or retired"},
			{Name: "limit", Type: "integer"}, {Name: "cursor", Type: "string"}},
	}, h.list)
	s.Route(http.MethodGet, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		Summary: "Read a release adapter", Status: http.StatusOK, Response: Release{}, ETag: true,
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
	var body PutBody
	if err := web.Bind(c, &body, false); err != nil {
		return err
	}
	ifMatch, err := web.IfMatch(c, false)
	if err != nil {
		return err
	}
	state, _ := StateNames.Parse(body.State)
	p := Put{ManifestHash: body.ManifestHash, ContentRefs: body.ContentRefs, State: State(state), InFlightPolicy: body.InFlightPolicy, IfMatch: ifMatch}
	r, created, err := h.store.Put(c.Request().Context(), h.canceller, tenancy.MustPrincipal(c).TenantID, rid, av, p)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, Location(rid, av), r.Version, r)
	}
	return web.JSONWithETag(c, http.StatusOK, r.Version, r)
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
	return web.JSONWithETag(c, http.StatusOK, r.Version, r)
}

type cursor struct {
	ReleaseID      string `json:"r"`
	AdapterVersion string `json:"a"`
}

func (h handlers) list(c echo.Context) error {
	limit, err := web.Limit(c)
	if err != nil {
		return err
	}
	f := ListFilter{Limit: limit + 1}
	if raw := c.QueryParam("state"); raw != "" {
		st, ok := StateNames.Parse(raw)
		if !ok {
			return apperr.FieldsInvalid(apperr.FieldError{Field: "state", Reason: "must be one of: verified active draining retired"})
		}
		s := State(st)
		f.State = &s
	}
	var cur cursor
	if _, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	}
	f.AfterReleaseID, f.AfterAdapterVersion = cur.ReleaseID, cur.AdapterVersion
	rs, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, web.NewPage(rs, limit, func(last Release) any {
		return cursor{ReleaseID: last.ReleaseID, AdapterVersion: last.AdapterVersion}
	}))
}
