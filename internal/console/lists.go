package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/history"
)

// attemptsFilter is the Attempts page's form, as typed: the attempts ended in a window,
// as the attempt insights count them (their bars and rows link here).
type attemptsFilter struct {
	State, Agent, Project, Release, Kind, ErrorCode, EndedFrom, EndedTo string
}

type attemptsView struct {
	Filter   attemptsFilter
	Attempts []history.AttemptItem
	First    string
	Next     string
	Later    bool
	Problem  string
	// States are the states the form offers ("" is the five the insight counts).
	States []string
}

type attemptCursor struct {
	EndedAt   time.Time `json:"e"`
	AttemptID uuid.UUID `json:"i"`
}

// attemptsPage lists the attempts ended in a window, newest end first.
func (c *console) attemptsPage(ctx echo.Context) error {
	q := ctx.QueryParams()
	f := attemptsFilter{State: q.Get("state"), Agent: strings.TrimSpace(q.Get("agent")), Project: strings.TrimSpace(q.Get("project")),
		Release: strings.TrimSpace(q.Get("release")), Kind: strings.TrimSpace(q.Get("kind")),
		ErrorCode: strings.TrimSpace(q.Get("errorCode")), EndedFrom: q.Get("endedFrom"), EndedTo: q.Get("endedTo")}
	v := attemptsView{Filter: f, States: api.AttemptState(0).EnumValues()[1:]}
	lf := history.EndedFilter{Limit: pageSize + 1, AgentID: optional(f.Agent), ProjectID: optional(f.Project),
		ReleaseID: optional(f.Release), Kind: optional(f.Kind), ErrorCode: optional(f.ErrorCode)}
	var problems []string
	var err error
	if f.State != "" {
		st, ok := parseEnum[api.AttemptState](f.State)
		if !ok || st == api.AttemptRunning {
			problems = append(problems, "state must be one of "+strings.Join(v.States, ", "))
		}
		lf.State = &st
	}
	if lf.From, err = parseTime(f.EndedFrom); err != nil {
		problems = append(problems, "“ended from” is not a time")
	}
	if lf.To, err = parseTime(f.EndedTo); err != nil {
		problems = append(problems, "“ended before” is not a time")
	}
	if cur := q.Get("cursor"); cur != "" {
		v.Later = true
		if ac, ok := decodeCursor[attemptCursor](cur); !ok {
			problems = append(problems, "the page link is damaged; start again from the first page")
		} else {
			lf.After = &history.ListCursor{StartedAt: ac.EndedAt, AttemptID: ac.AttemptID}
		}
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "attempts", page{Title: "Attempts", Nav: "insights", Data: v})
	}
	items, err := c.History.ListEnded(ctx.Request().Context(), tenantOf(ctx), lf)
	if err != nil {
		return err
	}
	nq := url.Values{}
	for k, vs := range q {
		if k != "cursor" && len(vs) > 0 && vs[0] != "" {
			nq.Set(k, vs[0])
		}
	}
	v.First = pageLink("/ui/attempts", nq)
	if len(items) > pageSize {
		items = items[:pageSize]
		last := items[len(items)-1]
		nq.Set("cursor", encodeCursor(attemptCursor{EndedAt: *last.EndedAt, AttemptID: last.AttemptID}))
		v.Next = pageLink("/ui/attempts", nq)
	}
	v.Attempts = items
	return c.render(ctx, http.StatusOK, "attempts", page{Title: "Attempts", Nav: "insights", Data: v})
}
