package api

// PutProjectRequest is the optional body of PUT /v1/projects/{projectId}. Absent members
// keep their value (or take their default on create).
type PutProjectRequest struct {
	// Active projects have their runs offered to claims.
	Active        *bool `json:"active,omitempty" default:"true"`
	RetentionDays *int  `json:"retentionDays,omitempty" validate:"omitempty,min=1,max=36500" default:"365" doc:"How long ended run chains are kept."`
	// DailyCostBudgetMicros holds claims of the project's runs once the cost its calls
	// recorded since 00:00 UTC reaches it: absent keeps it, null removes it.
	DailyCostBudgetMicros *int64 `json:"dailyCostBudgetMicros,omitempty" nullable:"true" validate:"omitempty,min=0" doc:"Claims of the project's runs are held (204 with Retry-After) once the cost (costMicros) its calls recorded since 00:00 UTC reaches this, until the next day or a higher budget. Absent keeps the budget; null removes it."`
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
	// DailyCostBudgetMicros is the project's daily cost budget, or null for none.
	DailyCostBudgetMicros *int64 `json:"dailyCostBudgetMicros" doc:"The daily cost budget in micro-units, or null for none."`
	// CostTodayMicros is the cost the project's calls recorded since 00:00 UTC.
	CostTodayMicros int64 `json:"costTodayMicros" doc:"The cost (costMicros) the project's calls recorded since 00:00 UTC."`
	// CostHeld says the budget is reached: claims of the project's runs are held until 00:00
	// UTC or a higher budget.
	CostHeld bool `json:"costHeld"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status" doc:"ok"`
	Detail string `json:"detail,omitempty"`
}

// DefaultRetentionDays is a new project's retention (seed D31: one year).
const DefaultRetentionDays = 365
