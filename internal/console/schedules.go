package console

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/schedules"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

type schedulesView struct {
	Schedules []schedules.Schedule
	Next      string
	Message   string
	Error     string
}

func (c *console) schedulesPage(ctx echo.Context) error {
	return c.renderSchedules(ctx, http.StatusOK, "")
}

func (c *console) renderSchedules(ctx echo.Context, status int, problem string) error {
	after := ctx.QueryParam("after")
	ss, err := c.Schedules.List(ctx.Request().Context(), tenantOf(ctx), after, pageSize+1)
	if err != nil {
		return err
	}
	v := schedulesView{Error: problem}
	if id := ctx.QueryParam("changed"); id != "" && problem == "" {
		switch ctx.QueryParam("did") {
		case "pause":
			v.Message = "Schedule " + id + " paused: it fires nothing until it is resumed."
		case "resume":
			v.Message = "Schedule " + id + " resumed: it fires from its next firing after now; nothing missed is fired."
		}
	}
	if len(ss) > pageSize {
		ss = ss[:pageSize]
		v.Next = pageLink("/ui/schedules", url.Values{"after": {ss[len(ss)-1].ScheduleID}})
	}
	v.Schedules = ss
	return c.render(ctx, status, "schedules", page{Title: "Schedules", Nav: "schedules", Data: v})
}

// changeSchedule pauses or resumes a schedule against the ETag of the page the form came
// from, keeping everything else as it was (PUT /v1/schedules/{id} with If-Match).
func (c *console) changeSchedule(ctx echo.Context) error {
	id, _ := url.PathUnescape(ctx.Param("scheduleId"))
	etag, ok := sqldb.ParseETag(formValue(ctx, "etag"))
	if !ok {
		return c.renderSchedules(ctx, http.StatusBadRequest, "The form lost the version it was opened at; try again.")
	}
	action := formValue(ctx, "action")
	if action != "pause" && action != "resume" {
		return c.renderSchedules(ctx, http.StatusBadRequest, "Unknown action.")
	}
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	cur, err := c.Schedules.Get(rctx, tenant, id)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	w := cur.Wire()
	ch := schedules.Change{Cron: w.Cron, Timezone: w.Timezone, Run: w.Run, Overlap: w.Overlap, CatchupSeconds: w.CatchupSeconds,
		Paused: action == "pause", Description: w.Description, KeyID: sessionOf(ctx).KeyID, IfMatch: &etag}
	_, _, err = c.Schedules.Put(rctx, tenant, id, ch)
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/schedules?"+url.Values{"changed": {id}, "did": {action}}.Encode())
	case apperr.Is(err, api.CodePreconditionFailed):
		return c.renderSchedules(ctx, http.StatusPreconditionFailed,
			"Schedule "+id+" changed since you opened this page; nothing was saved. The list below is current: try again.")
	default:
		return c.orNotFound(ctx, err)
	}
}
