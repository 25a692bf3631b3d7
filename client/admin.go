package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/jcs"
)

// maxUpdateTries bounds the read, change and write rounds of an Update… helper that keeps
// losing to concurrent writers.
const maxUpdateTries = 8

// PutProject creates a project (ifMatch empty) or updates it with the ETag it was read with
// (admin; PUT /v1/projects/{projectId}), and returns it with its new ETag. A create of a
// project that exists is ErrPreconditionRequired, so a create is not retried once it may
// have reached the service (its repeat would be refused that way). An update is retried;
// see ErrMaybeApplied. UpdateProject does the read, change and write for you.
func (c *Client) PutProject(ctx context.Context, projectID string, req api.PutProjectRequest, ifMatch string) (api.Project, string, error) {
	var out api.Project
	res, err := c.do(ctx, call{op: "putProject", params: []string{projectID}, body: req, ifMatch: ifMatch, out: &out})
	return out, res.etag(), err
}

// GetProject reads a project and its ETag.
func (c *Client) GetProject(ctx context.Context, projectID string) (api.Project, string, error) {
	var out api.Project
	res, err := c.do(ctx, call{op: "getProject", params: []string{projectID}, out: &out})
	return out, res.etag(), err
}

// ListProjects reads one page of the tenant's projects.
func (c *Client) ListProjects(ctx context.Context, params api.PageParams) (api.Page[api.ProjectItem], error) {
	return list[api.ProjectItem](ctx, c, "listProjects", params)
}

// Projects iterates over the tenant's projects.
func (c *Client) Projects(ctx context.Context) iter.Seq2[api.ProjectItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.ProjectItem], error) {
		return c.ListProjects(ctx, api.PageParams{Cursor: cursor})
	})
}

// UpdateProject reads a project, lets change edit a request filled with its current values,
// and writes it with the ETag it read. When another writer got there first (412), it reads
// and changes again, so change must say what the project should become ("set active to
// false"), not a step to take once.
func (c *Client) UpdateProject(ctx context.Context, projectID string, change func(req *api.PutProjectRequest) error) (api.Project, error) {
	for range maxUpdateTries {
		cur, etag, err := c.GetProject(ctx, projectID)
		if err != nil {
			return api.Project{}, err
		}
		req := api.PutProjectRequest{Active: api.Ptr(cur.Active), RetentionDays: api.Ptr(cur.RetentionDays)}
		if err := change(&req); err != nil {
			return api.Project{}, err
		}
		p, _, err := c.PutProject(ctx, projectID, req, etag)
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		return p, err
	}
	return api.Project{}, fmt.Errorf("update project %q: %w: it kept changing under %d tries", projectID, ErrPreconditionFailed, maxUpdateTries)
}

// PutRelease registers a verified release adapter (ifMatch empty) or moves its state or
// in-flight policy with the ETag it was read with (PUT
// /v1/releases/{releaseId}/adapters/{adapterVersion}), and returns it with its ETag. A
// repeat of a registration, or of an unchanged release, answers the release, so both are
// retried; a change is retried as an If-Match update (see ErrMaybeApplied). ManifestHash
// computes manifestHash; ManifestOf makes both of a list of string references.
func (c *Client) PutRelease(ctx context.Context, releaseID, adapterVersion string, req api.PutReleaseRequest, ifMatch string) (api.Release, string, error) {
	var out api.Release
	res, err := c.do(ctx, call{op: "putRelease", params: []string{releaseID, adapterVersion}, body: req, ifMatch: ifMatch, out: &out})
	return out, res.etag(), err
}

// GetRelease reads a release adapter and its ETag.
func (c *Client) GetRelease(ctx context.Context, releaseID, adapterVersion string) (api.Release, string, error) {
	var out api.Release
	res, err := c.do(ctx, call{op: "getRelease", params: []string{releaseID, adapterVersion}, out: &out})
	return out, res.etag(), err
}

// ListReleases reads one page of the tenant's releases.
func (c *Client) ListReleases(ctx context.Context, params api.ListReleasesParams) (api.Page[api.ReleaseItem], error) {
	return list[api.ReleaseItem](ctx, c, "listReleases", params)
}

// Releases iterates over the tenant's releases matching params.
func (c *Client) Releases(ctx context.Context, params api.ListReleasesParams) iter.Seq2[api.ReleaseItem, error] {
	return pages(ctx, func(ctx context.Context, cursor *string) (api.Page[api.ReleaseItem], error) {
		params.Cursor = cursor
		return c.ListReleases(ctx, params)
	})
}

// UpdateRelease reads a release adapter, lets change edit a request filled with its current
// values (only state and inFlightPolicy may differ), and writes it with the ETag it read,
// reading and changing again when another writer got there first.
func (c *Client) UpdateRelease(ctx context.Context, releaseID, adapterVersion string, change func(req *api.PutReleaseRequest) error) (api.Release, error) {
	for range maxUpdateTries {
		cur, etag, err := c.GetRelease(ctx, releaseID, adapterVersion)
		if err != nil {
			return api.Release{}, err
		}
		req := api.PutReleaseRequest{
			ManifestHash: cur.ManifestHash, ContentRefs: cur.ContentRefs,
			State: api.Ptr(cur.State), InFlightPolicy: api.Ptr(cur.InFlightPolicy),
		}
		if err := change(&req); err != nil {
			return api.Release{}, err
		}
		r, _, err := c.PutRelease(ctx, releaseID, adapterVersion, req, etag)
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		return r, err
	}
	return api.Release{}, fmt.Errorf("update release %q adapter %q: %w: it kept changing under %d tries",
		releaseID, adapterVersion, ErrPreconditionFailed, maxUpdateTries)
}

// ManifestOf returns the contentRefs of a release made of string references (URIs, digests)
// and its manifestHash (see ManifestHash). Invalid UTF-8 in a reference becomes U+FFFD, as
// encoding/json writes it.
func ManifestOf(refs ...string) (contentRefs []json.RawMessage, manifestHash string) {
	for _, r := range refs {
		b, _ := json.Marshal(r) // a string always marshals
		contentRefs = append(contentRefs, b)
	}
	hash, err := ManifestHash(contentRefs)
	if err != nil {
		panic("client: ManifestOf: " + err.Error()) // strings always have a canonical form
	}
	return contentRefs, hash
}

// ManifestHash returns the manifestHash of a release's contentRefs: the lowercase hex
// SHA-256 of the RFC 8785 (JCS) canonical form of the array, as the service computes it.
// It fails for content that has no canonical form (not I-JSON: invalid UTF-8, duplicate
// member names, numbers out of range).
func ManifestHash(contentRefs []json.RawMessage) (string, error) {
	raw, err := json.Marshal(contentRefs)
	if err != nil {
		return "", fmt.Errorf("manifest hash: %w", err)
	}
	canon, err := jcs.Canonicalize(raw)
	if err != nil {
		return "", fmt.Errorf("manifest hash: %w", err)
	}
	return hexSHA256(canon), nil
}

// Healthz checks the process answers (GET /healthz; no key needed).
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.do(ctx, call{op: "getHealth"})
	return err
}

// Readyz checks the service can serve: its database answers and its schema is current (GET
// /readyz; ErrDatabaseUnavailable otherwise). It is not retried, so it reports the moment.
func (c *Client) Readyz(ctx context.Context) error {
	_, err := c.do(ctx, call{op: "getReadiness"})
	return err
}

// OpenAPI reads the service's OpenAPI 3.1 document (GET /openapi.json).
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := c.do(ctx, call{op: "getOpenAPI", out: &out})
	return out, err
}
