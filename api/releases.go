package api

import "encoding/json"

// PutReleaseRequest is the body of PUT /v1/releases/{releaseId}/adapters/{adapterVersion}.
type PutReleaseRequest struct {
	// ManifestHash is the lowercase hex SHA-256 of the RFC 8785 (JCS) canonical form of
	// ContentRefs (else 422 manifest_mismatch).
	ManifestHash string `json:"manifestHash" validate:"required,len=64,hexadecimal"`
	// ContentRefs is the release's content, a JSON array; immutable once written.
	ContentRefs []json.RawMessage `json:"contentRefs" validate:"required"`
	// State is verified or active on create; moves follow verified -> active | retired,
	// active -> draining | retired, draining -> active | retired.
	State          *ReleaseState   `json:"state" validate:"required"`
	InFlightPolicy *InFlightPolicy `json:"inFlightPolicy,omitempty" doc:"What draining or retiring does to running attempts (default on create: drain; absent: unchanged)."`
}

// Release is one release and adapter version a tenant registered.
type Release struct {
	ReleaseID      string `json:"releaseId"`
	AdapterVersion string `json:"adapterVersion"`
	ManifestHash   string `json:"manifestHash"`
	// ContentRefs is the canonical form of the contentRefs registered.
	ContentRefs []json.RawMessage `json:"contentRefs"`
	State       ReleaseState      `json:"state"`
	// InFlightPolicy is the policy in force (drain when none was set).
	InFlightPolicy InFlightPolicy `json:"inFlightPolicy"`
	VerifiedAt     Time           `json:"verifiedAt"`
}

// ListReleasesParams are the query parameters of GET /v1/releases.
type ListReleasesParams struct {
	State *ReleaseState `query:"state"`
	PageParams
}
