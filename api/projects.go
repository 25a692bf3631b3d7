package api

// PutProjectRequest is the optional body of PUT /v1/projects/{projectId}. Absent members
// keep their value (or take their default on create).
type PutProjectRequest struct {
	// Active projects have their runs offered to claims.
	Active        *bool `json:"active,omitempty" default:"true"`
	RetentionDays *int  `json:"retentionDays,omitempty" validate:"omitempty,min=1,max=36500" default:"365" doc:"How long ended run chains are kept."`
}

// Project is a workspace of the tenant's runs.
type Project struct {
	ProjectID     string `json:"projectId"`
	Active        bool   `json:"active"`
	RetentionDays int    `json:"retentionDays"`
	// LeasedCount is how many of the project's runs are leased now.
	LeasedCount int  `json:"leasedCount"`
	CreatedAt   Time `json:"createdAt"`
	UpdatedAt   Time `json:"updatedAt"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status" doc:"ok"`
	Detail string `json:"detail,omitempty"`
}

// DefaultRetentionDays is a new project's retention (seed D31: one year).
const DefaultRetentionDays = 365
