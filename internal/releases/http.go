package releases

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// The example release's content and its manifest hash, computed as a client computes it.
var (
	exampleContentRefs = []json.RawMessage{
		[]byte(`{"path":"prompts/review.md","sha256":"9b74c9897bac770ffc029102a200c5de"}`),
		[]byte(`{"path":"tools.json","sha256":"4f2a1e0c0d8b7a6e5f4d3c2b1a09f8e7"}`),
	}
	exampleManifestHash = func() string {
		b, _ := json.Marshal(exampleContentRefs)
		canonical, err := Canonicalize(b)
		if err != nil {
			panic(err)
		}
		return ManifestHash(canonical)
	}()
)

// Routes registers the release routes. c cancels the runs of attempts still running on a
// release that is drained or retired under the cancel policy (the run-lease core:
// *runs.Service).
func Routes(s *web.Server, store *Store, c Canceller) {
	h := handlers{store: store, canceller: c}
	s.Route(http.MethodPut, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		ID: "putRelease", Tag: "Releases", Summary: "Register a release adapter or change its state",
		Description: "Registers a release adapter the runtime verified (201 with Location; state verified or active; no " +
			"If-Match), or moves its state or in-flight policy (200; If-Match required: 428 without it). An unchanged repeat " +
			"answers 200. manifestHash must be the lowercase hex SHA-256 of the RFC 8785 canonical form of contentRefs (422 " +
			"manifest_mismatch); content is immutable (409 release_immutable). States move verified -> active | retired, " +
			"active -> draining | retired, draining -> active | retired (else 409 illegal_transition); draining or retiring " +
			"applies the in-flight policy to running attempts. A release id belongs to the tenant that registered it first " +
			"(409 release_conflict for another).",
		Roles: []string{tenancy.RoleRuntime, tenancy.RoleAdmin}, Body: api.PutReleaseRequest{},
		Example: api.PutReleaseRequest{ManifestHash: exampleManifestHash, ContentRefs: exampleContentRefs,
			State: api.Ptr(api.ReleaseActive), InFlightPolicy: api.Ptr(api.PolicyDrain)},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Release{}, ETag: true, IfMatch: PutIfMatch,
		Problems: []api.ProblemCode{api.CodeManifestMismatch, api.CodeReleaseImmutable, api.CodeReleaseConflict,
			api.CodeIllegalTransition},
	}, h.put)
	s.Route(http.MethodGet, "/v1/releases", web.Op{
		ID: "listReleases", Tag: "Releases", Summary: "List the tenant's releases",
		Description: "The tenant's release adapters by release id, then adapter version, filtered by state.", Status: http.StatusOK, Response: api.Page[api.ReleaseItem]{},
		Query: api.ListReleasesParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/releases/:releaseId/adapters/:adapterVersion", web.Op{
		ID: "getRelease", Tag: "Releases", Summary: "Read a release adapter", Status: http.StatusOK, Response: api.Release{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
}

type handlers struct {
	store     *Store
	canceller Canceller
}

func pathIDs(c echo.Context) (releaseID, adapterVersion string, err error) {
	releaseID, err = web.PathIdent(c, "releaseId")
	if err != nil {
		return "", "", err
	}
	adapterVersion, err = web.PathIdent(c, "adapterVersion")
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
	ifMatch, err := web.IfMatch(c)
	if err != nil {
		return err
	}
	p := Put{ManifestHash: body.ManifestHash, ContentRefs: refs, State: *body.State,
		InFlightPolicy: body.InFlightPolicy, IfMatch: ifMatch}
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
	return web.WritePage(c, rs, limit, func(last Release) any {
		return cursor{ReleaseID: last.ReleaseID, AdapterVersion: last.AdapterVersion}
	}, Release.Item)
}
