package api

import "github.com/google/uuid"

// ScheduleOverlap is what a firing does while the schedule's previous run is still live
// (queued, leased or waiting): skip fires nothing and counts the skip, allow fires anyway.
type ScheduleOverlap string

// Overlap policies.
const (
	OverlapSkip  ScheduleOverlap = "skip"
	OverlapAllow ScheduleOverlap = "allow"
)

var scheduleOverlapNames = names{"skip", "allow"}

func (v ScheduleOverlap) String() string     { return string(v) }
func (v ScheduleOverlap) Valid() bool        { _, ok := scheduleOverlapNames.index(string(v)); return ok }
func (ScheduleOverlap) EnumValues() []string { return scheduleOverlapNames.values() }
func (v ScheduleOverlap) MarshalText() ([]byte, error) {
	return scheduleOverlapNames.marshalString(string(v), "overlap")
}
func (v *ScheduleOverlap) UnmarshalText(b []byte) error {
	s, err := scheduleOverlapNames.unmarshalString(b)
	*v = ScheduleOverlap(s)
	return err
}
func (v *ScheduleOverlap) UnmarshalJSON(b []byte) error {
	s, err := scheduleOverlapNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// Schedule defaults (DESIGN.md 5b).
const (
	DefaultScheduleTimezone = "UTC"
	DefaultScheduleOverlap  = OverlapSkip
	DefaultCatchupSeconds   = 60
	// MaxBatchItems bounds one batch enqueue.
	MaxBatchItems = 500
)

// PutScheduleRequest is the body of PUT /v1/schedules/{scheduleId}: the whole schedule
// (absent optional members take their defaults, on create and on update alike).
type PutScheduleRequest struct {
	Cron     string  `json:"cron" validate:"required,max=128" doc:"Five fields (minute hour day-of-month month day-of-week) with ranges, steps, lists and names; or a descriptor such as @hourly."`
	Timezone *string `json:"timezone,omitempty" validate:"omitempty,max=64" default:"UTC" doc:"An IANA time zone name. A time that does not exist on a day (a daylight-saving gap) fires at the first instant after the gap; a time that occurs twice fires once, at its first occurrence."`
	// Run is the enqueue body of every firing, validated as an enqueue is; each firing's
	// idempotency key is schedule:{scheduleId}:{fire time, RFC 3339 UTC}, so the body has
	// no idempotencyKey, and no dueAt or deadlineAt (absolute times do not recur).
	Run            RunSpec          `json:"run" validate:"required"`
	Overlap        *ScheduleOverlap `json:"overlap,omitempty" default:"skip"`
	CatchupSeconds *int             `json:"catchupSeconds,omitempty" validate:"omitempty,min=0,max=604800" default:"60" doc:"After downtime (or a late scheduler), firings older than this are skipped and counted, not fired."`
	Paused         *bool            `json:"paused,omitempty" default:"false" doc:"A paused schedule fires nothing; resuming does not fire what was missed."`
	Description    *string          `json:"description,omitempty" validate:"omitempty,max=1000"`
}

// ScheduleFiring is one firing of a schedule and the run it enqueued.
type ScheduleFiring struct {
	FireAt Time      `json:"fireAt"`
	RunID  uuid.UUID `json:"runId"`
}

// Schedule is recurring work: a run enqueued at every firing of a cron expression.
type Schedule struct {
	ScheduleID     string          `json:"scheduleId"`
	Cron           string          `json:"cron"`
	Timezone       string          `json:"timezone"`
	Run            RunSpec         `json:"run"`
	Overlap        ScheduleOverlap `json:"overlap"`
	CatchupSeconds int             `json:"catchupSeconds"`
	Paused         bool            `json:"paused"`
	Description    *string         `json:"description,omitempty"`
	NextFireAt     *Time           `json:"nextFireAt,omitempty" doc:"The next firing; absent while paused."`
	// LastFirings are the newest firings first (at most 10), with the runs they enqueued.
	LastFirings    []ScheduleFiring `json:"lastFirings"`
	Fired          int64            `json:"fired" doc:"Firings that enqueued a run."`
	SkippedOverlap int64            `json:"skippedOverlap" doc:"Firings skipped because the previous run was live (overlap skip)."`
	SkippedCatchup int64            `json:"skippedCatchup" doc:"Firings skipped because they were older than catchupSeconds when a scheduler reached them."`
	CreatedAt      Time             `json:"createdAt"`
	UpdatedAt      Time             `json:"updatedAt"`
}

// ScheduleItem is a schedule in a listing, with its entity tag.
type ScheduleItem struct {
	Schedule
	ETag string `json:"etag" doc:"The schedule's strong entity tag (as in its ETag header)."`
}

// BatchEnqueueRequest is the body of POST /v1/runs/batch.
type BatchEnqueueRequest struct {
	Items []EnqueueRequest `json:"items" validate:"required,min=1,max=500,dive"`
}

// BatchItem is one enqueued run of a batch.
type BatchItem struct {
	Run Run `json:"run"`
	// Existing marks an exact repeat of an earlier enqueue: the run was not created now.
	Existing bool `json:"existing"`
}

// BatchEnqueueResponse answers a batch: one item per request item, in order.
type BatchEnqueueResponse struct {
	Items []BatchItem `json:"items"`
}
