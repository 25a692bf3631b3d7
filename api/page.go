package api

import "time"

// Page is a collection response: a page of items and, when more follow, the cursor of the
// next page.
type Page[T any] struct {
	Items []T `json:"items"`
	// NextCursor continues the listing (pass it as ?cursor=); absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Page sizes (DESIGN.md section 7).
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// PageParams are the paging query parameters every listing takes.
type PageParams struct {
	Limit  *int    `query:"limit" validate:"omitempty,min=1,max=500" default:"50" doc:"The page size."`
	Cursor *string `query:"cursor" validate:"omitempty,max=1024" doc:"The nextCursor of the previous page (opaque, URL-safe)."`
}

// Ptr returns a pointer to v, for the optional (and the zero-valued required) members of
// request bodies: api.Ptr(api.PhaseActing), api.Ptr(int32(0)).
func Ptr[T any](v T) *T { return &v }

// WaitParams are the query parameters of a read that may wait for a change (a decision's
// close, a run's end).
type WaitParams struct {
	WaitSeconds *int `query:"waitSeconds" validate:"omitempty,min=0,max=30" default:"0" doc:"Wait up to this long for the resource to reach its final state before answering (with the state then current)."`
}

// Wait is how long p asks to wait.
func (p WaitParams) Wait() time.Duration {
	if p.WaitSeconds == nil {
		return 0
	}
	return time.Duration(*p.WaitSeconds) * time.Second
}
