package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/history"
)

// attemptsFilter is the Attempts page's form, as typed: the attempts ended in a window,
// as the attempt insights count them (their bars and rows link here).
type attemptsFilter struct {
	State, Agent, Project, Release, Kind, ErrorCode, EndedFrom, EndedTo string
	// HasError "false" lists the attempts without an error (the errorCode insight's "(none)").
	HasError string
	// Not are the not* lists (notProject, notAgent, notRelease, notKind, notErrorCode).
	Not []exclusion
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
		ErrorCode: strings.TrimSpace(q.Get("errorCode")), EndedFrom: q.Get("endedFrom"), EndedTo: q.Get("endedTo"),
		HasError: q.Get("hasError")}
	v := attemptsView{Filter: f, States: api.AttemptState(0).EnumValues()[1:]}
	lf := history.EndedFilter{Limit: pageSize + 1, AgentID: optional(f.Agent), ProjectID: optional(f.Project),
		ReleaseID: optional(f.Release), Kind: optional(f.Kind), ErrorCode: optional(f.ErrorCode)}
	var problems []string
	var err error
	var not map[string][]string
	not, v.Filter.Not = exclusions(q, &problems, "notProject", "notAgent", "notRelease", "notKind", "notErrorCode")
	lf.Not = history.NotLists{ProjectIDs: not["notProject"], AgentIDs: not["notAgent"], ReleaseIDs: not["notRelease"],
		Kinds: not["notKind"], ErrorCodes: not["notErrorCode"]}
	if lf.HasError, err = parseFlag(f.HasError, f.ErrorCode != ""); err != nil {
		problems = append(problems, "hasError "+err.Error())
	}
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
	ac, later, ok := pageCursor[attemptCursor](q, &problems)
	v.Later = later
	if ok {
		lf.After = &history.ListCursor{StartedAt: ac.EndedAt, AttemptID: ac.AttemptID}
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "attempts", page{Title: "Attempts", Nav: "insights", Data: v})
	}
	items, err := c.History.ListEnded(ctx.Request().Context(), tenantOf(ctx), lf)
	if err != nil {
		return err
	}
	v.Attempts, v.First, v.Next, _ = keysetPage("/ui/attempts", q, items, func(a history.AttemptItem) attemptCursor {
		return attemptCursor{EndedAt: *a.EndedAt, AttemptID: a.AttemptID}
	})
	return c.render(ctx, http.StatusOK, "attempts", page{Title: "Attempts", Nav: "insights", Data: v})
}

// callsFilter is the Calls page's form, as typed: the tenant's calls started in a window
// (the calls insight's rows link here) or finished in one (the usage insight's).
type callsFilter struct {
	StartedFrom, StartedTo, EndedFrom, EndedTo string
	Target, Model, ReportedUsage               string
	Project, Agent, Release, Kind              string
	// HasModel "false" lists the calls that named no model (the usage insight's "(no model)").
	HasModel string
	// Not are the not* lists (notTarget, notModel).
	Not []exclusion
}

type callsView struct {
	Filter  callsFilter
	Calls   []calls.Call
	ByEnd   bool
	First   string
	Next    string
	Later   bool
	Problem string
}

type callCursor struct {
	At     time.Time `json:"t"`
	CallID uuid.UUID `json:"i"`
}

// callsPage lists the tenant's calls, newest first by start or, with an ended range, by end.
func (c *console) callsPage(ctx echo.Context) error {
	q := ctx.QueryParams()
	trim := func(name string) string { return strings.TrimSpace(q.Get(name)) }
	f := callsFilter{StartedFrom: q.Get("startedFrom"), StartedTo: q.Get("startedTo"), EndedFrom: q.Get("endedFrom"),
		EndedTo: q.Get("endedTo"), Target: trim("target"), Model: trim("model"), ReportedUsage: q.Get("reportedUsage"),
		Project: trim("project"), Agent: trim("agent"), Release: trim("release"), Kind: trim("kind"), HasModel: q.Get("hasModel")}
	v := callsView{Filter: f, ByEnd: f.EndedFrom != "" || f.EndedTo != ""}
	lf := calls.TenantFilter{Limit: pageSize + 1, Ended: v.ByEnd, Target: optional(f.Target), Model: optional(f.Model),
		ProjectID: optional(f.Project), AgentID: optional(f.Agent),
		ReleaseID: optional(f.Release), Kind: optional(f.Kind)}
	var problems []string
	from, to := f.StartedFrom, f.StartedTo
	if v.ByEnd {
		if f.StartedFrom != "" || f.StartedTo != "" {
			problems = append(problems, "list by start or by end, not both")
		}
		from, to = f.EndedFrom, f.EndedTo
	}
	var err error
	var not map[string][]string
	not, v.Filter.Not = exclusions(q, &problems, "notTarget", "notModel")
	lf.NotTargets, lf.NotModels = not["notTarget"], not["notModel"]
	if lf.HasModel, err = parseFlag(f.HasModel, f.Model != ""); err != nil {
		problems = append(problems, "hasModel "+err.Error())
	}
	if lf.From, err = parseTime(from); err != nil {
		problems = append(problems, "“from” is not a time")
	}
	if lf.To, err = parseTime(to); err != nil {
		problems = append(problems, "“before” is not a time")
	}
	if reported, err := parseFlag(f.ReportedUsage, false); err != nil {
		problems = append(problems, "reportedUsage "+err.Error())
	} else {
		lf.ReportedUsage = reported != nil && *reported
	}
	cc, later, ok := pageCursor[callCursor](q, &problems)
	v.Later = later
	if ok {
		lf.After = &calls.TenantCursor{At: cc.At, CallID: cc.CallID}
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "calls", page{Title: "Calls", Nav: "insights", Data: v})
	}
	cs, err := c.Calls.ListTenant(ctx.Request().Context(), tenantOf(ctx), lf)
	if err != nil {
		return err
	}
	cs, v.First, v.Next, _ = keysetPage("/ui/calls", q, cs, func(c calls.Call) callCursor {
		if v.ByEnd {
			return callCursor{At: *c.EndedAt, CallID: c.CallID}
		}
		return callCursor{At: c.StartedAt, CallID: c.CallID}
	})
	v.Calls = cs
	return c.render(ctx, http.StatusOK, "calls", page{Title: "Calls", Nav: "insights", Data: v})
}

// pageCursor reads a list page's cursor: ok with a readable one; later says one was given
// (a damaged one adds the problem every list states, and lists from the first page).
func pageCursor[C any](q url.Values, problems *[]string) (c C, later, ok bool) {
	cur := q.Get("cursor")
	if cur == "" {
		return c, false, false
	}
	if c, ok = decodeCursor[C](cur); !ok {
		*problems = append(*problems, "the page link is damaged; start again from the first page")
	}
	return c, true, ok
}

// exclusion is one not* list of a list page (an insight's "other" group leaves out the
// groups it names), kept in the filter form as hidden inputs.
type exclusion struct {
	Name   string
	Values []string
}

// maxExcluded bounds a not* list: the groups an insight names, and a little more (the
// API's lists take as many).
const maxExcluded = api.InsightMaxGroups + 14

// exclusions reads a page's not* lists by their form names (each repeated, one item each;
// blank items dropped), adding a problem for a list longer than maxExcluded.
func exclusions(q url.Values, problems *[]string, names ...string) (map[string][]string, []exclusion) {
	lists := map[string][]string{}
	var shown []exclusion
	for _, name := range names {
		var items []string
		for _, v := range q[name] {
			if v = strings.TrimSpace(v); v != "" {
				items = append(items, v)
			}
		}
		if len(items) > maxExcluded {
			*problems = append(*problems, fmt.Sprintf("%s lists more than %d values", name, maxExcluded))
			continue
		}
		if len(items) > 0 {
			lists[name] = items
			shown = append(shown, exclusion{Name: name, Values: items})
		}
	}
	return lists, shown
}

// parseFlag reads an optional true/false filter; false is refused beside the value it
// denies (named: "errorCode" with hasError=false would list nothing).
func parseFlag(s string, named bool) (*bool, error) {
	switch s {
	case "":
		return nil, nil
	case "true":
		return api.Ptr(true), nil
	case "false":
		if named {
			return nil, errors.New("must not be false beside the value it says is absent")
		}
		return api.Ptr(false), nil
	}
	return nil, errors.New("must be true or false")
}
