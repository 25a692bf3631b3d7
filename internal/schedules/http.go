package schedules

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// exampleSpec is a schedule's run in the document's examples.
var exampleSpec = api.RunSpec{Subject: "triage:issues", Kind: "triage", ProjectID: "web", AgentID: "triager",
	StepID: uuid.MustParse("6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d"), SnapshotID: uuid.MustParse("0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f")}

// Routes registers the schedule routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	ad := tenancy.RoleAdmin
	s.Route(http.MethodPut, "/v1/schedules/:scheduleId", web.Op{
		ID: "putSchedule", Tag: "Schedules", Summary: "Create or replace a schedule",
		Description: "Creates the schedule (201 with Location; no If-Match) or replaces it (200; If-Match required: 428 without " +
			"it, 412 when stale). Absent optional members take their defaults. Every firing enqueues run with the idempotency " +
			"key schedule:{scheduleId}:{fire time, RFC 3339 UTC}, so a firing is one run whichever replica fires it. run is " +
			"validated as an enqueue body (fields named run.field) and has no idempotencyKey, dueAt or deadlineAt; an invalid " +
			"cron or timezone is 400 naming the field. Changing cron or timezone, or resuming, starts the firings after now: " +
			"nothing missed is back-filled. Daylight saving: a time that does not exist that day fires at the first instant " +
			"after the gap; a time that occurs twice fires once, at its first occurrence.",
		Roles: []string{ad}, Body: api.PutScheduleRequest{},
		Example: api.PutScheduleRequest{Cron: "*/15 * * * *", Timezone: api.Ptr("Europe/Berlin"), Run: exampleSpec,
			Overlap: api.Ptr(api.OverlapSkip), CatchupSeconds: api.Ptr(60)},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Schedule{}, ETag: true, IfMatch: PutIfMatch,
		Problems: []api.ProblemCode{api.CodeUnknownProject},
	}, h.put)
	s.Route(http.MethodGet, "/v1/schedules", web.Op{
		ID: "listSchedules", Tag: "Schedules", Summary: "List the tenant's schedules",
		Description: "In id order, each with its next firing, its newest firings and the runs they enqueued, and its skip counts.",
		Status:      http.StatusOK, Response: api.Page[api.ScheduleItem]{}, Query: api.PageParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/schedules/:scheduleId", web.Op{
		ID: "getSchedule", Tag: "Schedules", Summary: "Read a schedule",
		Status: http.StatusOK, Response: api.Schedule{}, ETag: true, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodDelete, "/v1/schedules/:scheduleId", web.Op{
		ID: "deleteSchedule", Tag: "Schedules", Summary: "Delete a schedule",
		Description: "The schedule fires no more; the runs it enqueued stay.",
		Roles:       []string{ad}, Status: http.StatusNoContent, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.delete)
}

type handlers struct{ store *Store }

// scheduleID reads the path's id: an identifier without "/" or ":" (the firing keys are
// schedule:{id}:{time}, so an id with ":" would share its prefix with another's).
func scheduleID(c echo.Context) (string, error) {
	id, err := web.PathIdent(c, "scheduleId")
	if err != nil {
		return "", err
	}
	if err := CheckID(id); err != nil {
		return "", err
	}
	return id, nil
}

func (h handlers) put(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	var req api.PutScheduleRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	ch, err := ChangeOf(req)
	if err != nil {
		return err
	}
	if ch.IfMatch, err = web.IfMatch(c); err != nil {
		return err
	}
	p := tenancy.MustPrincipal(c)
	ch.KeyID = p.KeyID
	sc, created, err := h.store.Put(c.Request().Context(), p.TenantID, id, ch)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "schedules", id), sc.Version, sc.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, sc.Version, sc.Wire())
}

func (h handlers) get(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	sc, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, sc.Version, sc.Wire())
}

func (h handlers) delete(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	if err := h.store.Delete(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
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
	ss, err := h.store.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, cur.After, limit+1)
	if err != nil {
		return err
	}
	return web.WritePage(c, ss, limit, func(last Schedule) any { return cursor{After: last.ScheduleID} }, Schedule.Item)
}
