package console

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
	"github.com/ledger-dev/ledger/internal/web"
)

// Decisions inbox.

// decisionStatuses lists the statuses the inbox filters by, pending first.
var decisionStatuses = api.DecisionStatus("").EnumValues()

// parseEnum reads a wire enum name (ok false when it is none of the enum's names).
func parseEnum[T any, PT interface {
	*T
	UnmarshalText([]byte) error
}](s string) (T, bool) {
	var v T
	if err := PT(&v).UnmarshalText([]byte(s)); err != nil {
		return v, false
	}
	return v, true
}

type decisionsView struct {
	Status    string
	Statuses  []string
	Project   string
	Decisions []decisions.Decision
	Next      string
	// Narrowed is the insight's filters a decisions bar links with (kind, requested window,
	// agent, release, run kind), as typed, carried to the next page and shown above the list.
	Narrowed url.Values
	Problem  string
}

// decisionFilters are the decisions list's filters beside status and project, by their
// query names: what the decisions insight counts by.
var decisionFilters = []string{"kind", "requestedFrom", "requestedTo", "agent", "release", "runKind"}

// decisionCursor is the inbox's keyset position: its group (pending first), then age.
type decisionCursor struct {
	Rank int       `json:"k"`
	At   string    `json:"t"`
	ID   uuid.UUID `json:"i"`
}

func (c *console) decisionsPage(ctx echo.Context) error {
	status := ctx.QueryParam("status")
	if status == "" {
		status = string(api.DecisionPending)
	}
	project := strings.TrimSpace(ctx.QueryParam("project"))
	v := decisionsView{Status: status, Statuses: append([]string{"all"}, decisionStatuses...), Project: project, Narrowed: url.Values{}}
	f := decisions.ListFilter{Limit: pageSize + 1, ProjectID: optional(project)}
	if status != "all" {
		st := api.DecisionStatus(status)
		if !st.Valid() {
			return c.notFound(ctx)
		}
		f.Status = &st
	}
	for _, name := range decisionFilters {
		if s := strings.TrimSpace(ctx.QueryParam(name)); s != "" {
			v.Narrowed.Set(name, s)
		}
	}
	f.AgentID, f.ReleaseID, f.RunKind = optional(v.Narrowed.Get("agent")), optional(v.Narrowed.Get("release")), optional(v.Narrowed.Get("runKind"))
	var problems []string
	if k := v.Narrowed.Get("kind"); k != "" {
		kind, ok := parseEnum[api.DecisionKind](k)
		if !ok {
			problems = append(problems, "kind must be one of "+strings.Join(kind.EnumValues(), ", "))
		}
		f.Kind = &kind
	}
	var err error
	if f.RequestedFrom, err = parseTime(v.Narrowed.Get("requestedFrom")); err != nil {
		problems = append(problems, "“requested from” is not a time")
	}
	if f.RequestedTo, err = parseTime(v.Narrowed.Get("requestedTo")); err != nil {
		problems = append(problems, "“requested before” is not a time")
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "decisions", page{Title: "Decisions", Nav: "decisions", Data: v})
	}
	if cur, ok := decodeCursor[decisionCursor](ctx.QueryParam("cursor")); ok {
		if at, err := parseTime(cur.At); err == nil && at != nil {
			f.After = &decisions.Position{Rank: cur.Rank, RequestedAt: *at, DecisionID: cur.ID}
		}
	}
	ds, err := c.Decisions.List(ctx.Request().Context(), tenantOf(ctx), f)
	if err != nil {
		return err
	}
	q := url.Values{"status": {status}, "project": {project}}
	for name, vs := range v.Narrowed {
		q[name] = vs
	}
	ds, _, v.Next, _ = keysetPage("/ui/decisions", q, ds, func(d decisions.Decision) decisionCursor {
		return decisionCursor{Rank: decisions.Rank(d), At: d.RequestedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ID: d.DecisionID}
	})
	v.Decisions = ds
	return c.render(ctx, http.StatusOK, "decisions", page{Title: "Decisions", Nav: "decisions", Data: v})
}

type decisionView struct {
	Decision decisions.Decision
	ETag     string
	// Options are a choice decision's options, when they are a list of strings.
	Options []string
	// Changed says an answer was refused because the decision changed since the form
	// was opened; Message says how.
	Changed bool
	Message string
	Done    bool
	// Form holds what was typed, to show again after a refusal.
	Form answerForm
}

type answerForm struct {
	Status, Answer, ApprovalID string
}

func (c *console) decisionPage(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "decisionId")
	if err != nil {
		return c.notFound(ctx)
	}
	d, err := c.Decisions.Get(ctx.Request().Context(), tenantOf(ctx), id)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	return c.renderDecision(ctx, http.StatusOK, decisionView{Decision: d, Done: ctx.QueryParam("answered") == "1"})
}

func (c *console) renderDecision(ctx echo.Context, status int, v decisionView) error {
	v.ETag = v.Decision.Version.ETag()
	var opts []string
	// A list of options past what a page shows is answered by typing the choice.
	if len(v.Decision.Options) <= maxShownBytes && json.Unmarshal(v.Decision.Options, &opts) == nil {
		v.Options = opts
	}
	return c.render(ctx, status, "decision", page{Title: "Decision", Nav: "decisions", Data: v})
}

// answerDecision answers with the ETag of the page the form came from. If the decision
// changed since (answered by someone else, expired, cancelled, or any new version), the
// page shows that, with the decision as it is now, instead of answering.
func (c *console) answerDecision(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "decisionId")
	if err != nil {
		return c.notFound(ctx)
	}
	rctx, s := ctx.Request().Context(), sessionOf(ctx)
	form := answerForm{Status: formValue(ctx, "status"), Answer: strings.TrimSpace(formValue(ctx, "answer")),
		ApprovalID: strings.TrimSpace(formValue(ctx, "approvalId"))}
	var problems []string
	if !api.AnswerStatus(form.Status).Valid() {
		problems = append(problems, "choose approve or reject")
	}
	if form.ApprovalID != "" {
		if _, err := uuid.Parse(form.ApprovalID); err != nil {
			problems = append(problems, "the approval id must be a UUID")
		}
	}
	etag, ok := sqldb.ParseETag(formValue(ctx, "etag"))
	if !ok {
		problems = append(problems, "the form lost the version it was opened at; reload the page")
	}
	var a decisions.Answer
	if len(problems) == 0 {
		req, err := answerRequest(ctx, form)
		if err == nil {
			a, err = decisions.AnswerOf(req, s.KeyID, etag)
		}
		if err != nil {
			problems = append(problems, refusal("The answer was refused", err))
		}
	}
	if len(problems) > 0 {
		d, err := c.Decisions.Get(rctx, s.TenantID, id)
		if err != nil {
			return c.orNotFound(ctx, err)
		}
		return c.renderDecision(ctx, http.StatusBadRequest, decisionView{Decision: d, Message: strings.Join(problems, "; "), Form: form})
	}
	_, err = c.Decisions.Answer(rctx, s.TenantID, id, a)
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/decisions/"+id.String()+"?answered=1")
	case apperr.Is(err, api.CodePreconditionFailed), apperr.Is(err, api.CodeDecisionClosed):
		cur, gerr := c.Decisions.Get(rctx, s.TenantID, id)
		if gerr != nil {
			return c.orNotFound(ctx, gerr)
		}
		status := http.StatusPreconditionFailed
		if apperr.Is(err, api.CodeDecisionClosed) {
			status = http.StatusConflict
		}
		return c.renderDecision(ctx, status, decisionView{Decision: cur, Changed: true, Form: form,
			Message: "This decision changed since you opened it, so your answer was not recorded. It is shown below as it is now."})
	case apperr.Is(err, api.CodeInvalidRequest):
		cur, gerr := c.Decisions.Get(rctx, s.TenantID, id)
		if gerr != nil {
			return c.orNotFound(ctx, gerr)
		}
		return c.renderDecision(ctx, http.StatusBadRequest, decisionView{Decision: cur, Message: refusal("The answer was refused", err), Form: form})
	default:
		return c.orNotFound(ctx, err)
	}
}

// answerRequest turns the answer form into the API's request and decodes it with the API's
// strict decoder and validation, so the console stores nothing the API would refuse (a
// member given twice, nesting past the limit). The form is for people: text that does not
// start like a JSON document or string, and is no JSON scalar, is sent as a JSON string.
func answerRequest(ctx echo.Context, form answerForm) (api.AnswerDecisionRequest, error) {
	var req api.AnswerDecisionRequest
	status, _ := json.Marshal(form.Status)
	body := []byte(`{"status":` + string(status))
	if form.ApprovalID != "" {
		id, _ := json.Marshal(form.ApprovalID)
		body = append(append(body, `,"approvalId":`...), id...)
	}
	text := form.Answer
	if text != "" && !strings.ContainsAny(text[:1], `{["`) && !json.Valid([]byte(text)) {
		b, _ := json.Marshal(text)
		text = string(b)
	}
	if text != "" {
		// The answer goes in as typed, last, where the API would find it: the decoder then
		// counts its depth and finds its duplicates exactly as for an API body.
		body = append(append(body, `,"answer":`...), text...)
	}
	body = append(body, '}')
	if err := web.BindJSON(ctx, body, &req); err != nil {
		return req, err
	}
	if text != "" && string(req.Answer) != text {
		// More than the answer: it closed the value and went on ("{}, ...").
		return req, apperr.New(api.CodeInvalidRequest, "the answer must be one JSON value (or plain text)")
	}
	return req, nil
}

// maxListedFields bounds the field errors a page lists.
const maxListedFields = 10

// refusal words an invalid_request for a page: what was refused, the detail, every field.
func refusal(what string, err error) string {
	e, ok := apperr.As(err)
	if !ok {
		return what + "."
	}
	msg := what + ": " + e.Detail
	for i, f := range e.Fields {
		if i == maxListedFields {
			return msg + fmt.Sprintf("; and %d more", len(e.Fields)-i)
		}
		msg += "; " + f.Field + " " + f.Reason
	}
	return msg
}

func (c *console) orNotFound(ctx echo.Context, err error) error {
	if apperr.Is(err, api.CodeNotFound) {
		return c.notFound(ctx)
	}
	return err
}

// Releases.

type releaseRow struct {
	releases.Release
	Moves []string
}

type releasesView struct {
	State    string
	Releases []releaseRow
	Next     string
	Message  string
}

type releaseCursor struct {
	R string `json:"r"`
	V string `json:"v"`
}

// moves lists the states a release in state s may move to.
func moves(s api.ReleaseState) []string {
	var out []string
	for to := api.ReleaseVerified; to <= api.ReleaseRetired; to++ {
		if releases.CanMove(s, to) {
			out = append(out, to.String())
		}
	}
	return out
}

func (c *console) releasesPage(ctx echo.Context) error {
	v := releasesView{State: ctx.QueryParam("state")}
	f := releases.ListFilter{Limit: pageSize + 1}
	if v.State != "" {
		st, ok := parseEnum[api.ReleaseState](v.State)
		if !ok {
			return c.notFound(ctx)
		}
		f.State = &st
	}
	if cur, ok := decodeCursor[releaseCursor](ctx.QueryParam("cursor")); ok {
		f.AfterReleaseID, f.AfterAdapterVersion = cur.R, cur.V
	}
	rs, err := c.Releases.List(ctx.Request().Context(), tenantOf(ctx), f)
	if err != nil {
		return err
	}
	if len(rs) > pageSize {
		rs = rs[:pageSize]
		last := rs[len(rs)-1]
		q := url.Values{"cursor": {encodeCursor(releaseCursor{R: last.ReleaseID, V: last.AdapterVersion})}}
		if v.State != "" {
			q.Set("state", v.State)
		}
		v.Next = pageLink("/ui/releases", q)
	}
	for _, r := range rs {
		v.Releases = append(v.Releases, releaseRow{Release: r, Moves: moves(r.State)})
	}
	if ctx.QueryParam("moved") != "" {
		v.Message = "Release " + ctx.QueryParam("moved") + " is now " + ctx.QueryParam("to") + "."
	}
	return c.render(ctx, http.StatusOK, "releases", page{Title: "Releases", Nav: "releases", Data: v})
}

type moveView struct {
	Release releases.Release
	To      string
	ETag    string
	Message string
	Changed bool
}

func (c *console) releaseParams(ctx echo.Context) (string, string) {
	rid, _ := url.PathUnescape(ctx.Param("releaseId"))
	ver, _ := url.PathUnescape(ctx.Param("adapterVersion"))
	return rid, ver
}

// confirmReleaseMove asks before a state transition: the confirmation is a page, so it
// works without JavaScript, and it says what the move does to running attempts.
func (c *console) confirmReleaseMove(ctx echo.Context) error {
	rid, ver := c.releaseParams(ctx)
	r, err := c.Releases.Get(ctx.Request().Context(), tenantOf(ctx), rid, ver)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	to := ctx.QueryParam("to")
	st, ok := parseEnum[api.ReleaseState](to)
	if !ok || !releases.CanMove(r.State, st) {
		return c.render(ctx, http.StatusConflict, "move", page{Title: "Move release", Nav: "releases",
			Data: moveView{Release: r, ETag: r.Version.ETag(), Message: "A " + r.State.String() + " release cannot move to “" + to + "”."}})
	}
	return c.render(ctx, http.StatusOK, "move", page{Title: "Move release", Nav: "releases",
		Data: moveView{Release: r, To: to, ETag: r.Version.ETag()}})
}

func (c *console) moveRelease(ctx echo.Context) error {
	rid, ver := c.releaseParams(ctx)
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	cur, err := c.Releases.Get(rctx, tenant, rid, ver)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	to := formValue(ctx, "to")
	st, ok := parseEnum[api.ReleaseState](to)
	etag, okTag := sqldb.ParseETag(formValue(ctx, "etag"))
	if !ok || !okTag {
		return c.render(ctx, http.StatusBadRequest, "move", page{Title: "Move release", Nav: "releases",
			Data: moveView{Release: cur, ETag: cur.Version.ETag(), Message: "The form is incomplete; open the release list again."}})
	}
	_, _, err = c.Releases.Put(rctx, c.Runs, tenant, rid, ver, releases.Put{ManifestHash: cur.ManifestHash,
		ContentRefs: []byte(cur.ContentRefsJSON), State: st, IfMatch: &etag})
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/releases?"+url.Values{"moved": {rid + " " + ver}, "to": {to}}.Encode())
	case apperr.Is(err, api.CodePreconditionFailed):
		return c.render(ctx, http.StatusPreconditionFailed, "move", page{Title: "Move release", Nav: "releases",
			Data: moveView{Release: cur, To: to, ETag: cur.Version.ETag(), Changed: true,
				Message: "This release changed since you opened it; nothing was moved. It is shown as it is now: confirm again if the move still makes sense."}})
	case apperr.Is(err, api.CodeIllegalTransition):
		return c.render(ctx, http.StatusConflict, "move", page{Title: "Move release", Nav: "releases",
			Data: moveView{Release: cur, ETag: cur.Version.ETag(), Message: "A " + cur.State.String() + " release cannot move to “" + to + "”."}})
	default:
		return c.orNotFound(ctx, err)
	}
}

// Projects.

type projectsView struct {
	Projects []projects.Project
	Next     string
	Message  string
	Error    string
}

func (c *console) projectsPage(ctx echo.Context) error {
	return c.renderProjects(ctx, http.StatusOK, ctx.QueryParam("after"), "", "")
}

func (c *console) renderProjects(ctx echo.Context, status int, after, msg, problem string) error {
	ps, err := c.Projects.List(ctx.Request().Context(), tenantOf(ctx), after, pageSize+1)
	if err != nil {
		return err
	}
	v := projectsView{Message: msg, Error: problem}
	if id := ctx.QueryParam("changed"); id != "" && msg == "" {
		v.Message = "Project " + id + " saved."
		switch ctx.QueryParam("did") {
		case "pause":
			v.Message = "Project " + id + " paused: its queued runs will not be offered to claims until it is resumed (runs already leased go on)."
		case "resume":
			v.Message = "Project " + id + " resumed: its queued runs are offered to claims again."
		case "create":
			v.Message = "Project " + id + " created (active, history kept 365 days)."
		}
	}
	if len(ps) > pageSize {
		ps = ps[:pageSize]
		v.Next = pageLink("/ui/projects", url.Values{"after": {ps[len(ps)-1].ProjectID}})
	}
	v.Projects = ps
	return c.render(ctx, status, "projects", page{Title: "Projects", Nav: "projects", Data: v})
}

// changeProject pauses, resumes or sets the retention of a project, against the ETag of
// the page the form came from.
func (c *console) changeProject(ctx echo.Context) error {
	id, _ := url.PathUnescape(ctx.Param("projectId"))
	etag, ok := sqldb.ParseETag(formValue(ctx, "etag"))
	if !ok {
		return c.renderProjects(ctx, http.StatusBadRequest, "", "", "The form lost the version it was opened at; try again.")
	}
	ch := projects.Change{IfMatch: &etag}
	switch formValue(ctx, "action") {
	case "pause":
		f := false
		ch.Active = &f
	case "resume":
		t := true
		ch.Active = &t
	case "retention":
		days, err := strconv.Atoi(strings.TrimSpace(formValue(ctx, "retentionDays")))
		if err != nil || days < 1 || days > 36500 {
			return c.renderProjects(ctx, http.StatusBadRequest, "", "", "Retention must be a whole number of days from 1 to 36500.")
		}
		ch.RetentionDays = &days
	default:
		return c.renderProjects(ctx, http.StatusBadRequest, "", "", "Unknown action.")
	}
	_, _, err := c.Projects.Put(ctx.Request().Context(), tenantOf(ctx), id, ch)
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/projects?"+url.Values{"changed": {id}, "did": {formValue(ctx, "action")}}.Encode())
	case apperr.Is(err, api.CodePreconditionFailed):
		return c.renderProjects(ctx, http.StatusPreconditionFailed, "", "",
			"Project "+id+" changed since you opened this page; nothing was saved. The list below is current: try again.")
	default:
		return c.orNotFound(ctx, err)
	}
}

// createProject creates a project (active, default retention), as PUT /v1/projects/{id}
// without If-Match does; an existing id is refused, never changed.
func (c *console) createProject(ctx echo.Context) error {
	id := formValue(ctx, "projectId") // the form's, never the query string's
	if why := validate.IdentProblem(id, 64, true); why != "" {
		return c.renderProjects(ctx, http.StatusBadRequest, "", "", "Project id "+why+".")
	}
	_, created, err := c.Projects.Put(ctx.Request().Context(), tenantOf(ctx), id, projects.Change{})
	switch {
	case err == nil && created:
		return ctx.Redirect(http.StatusSeeOther, "/ui/projects?"+url.Values{"changed": {id}, "did": {"create"}}.Encode())
	case err == nil, apperr.Is(err, api.CodePreconditionRequired):
		return c.renderProjects(ctx, http.StatusConflict, "", "", "Project "+id+" already exists; nothing was changed.")
	default:
		return err
	}
}

// pageLink is the whole link to a listing's next page, built here rather than in the
// template: html/template escapes a value placed after "?" as one query component, so the
// "=" and "&" of a query string would arrive as %3d and %26 and the link would open the
// first page again, without its filters.
func pageLink(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// keysetPage cuts a listing read with one row beyond the page (the probe that says whether
// a next page exists) to the page, and links its first and next pages under the request's
// filters (its query without the cursor); the next page starts after the last row's cursor.
func keysetPage[T, C any](path string, q url.Values, rows []T, cursorOf func(T) C) (page []T, first, next string, filters url.Values) {
	filters = url.Values{}
	for k, vs := range q {
		if k != "cursor" && len(vs) > 0 && vs[0] != "" {
			// Every value: a not* list's items are all part of the filter.
			filters[k] = vs
		}
	}
	first = pageLink(path, filters)
	if len(rows) <= pageSize {
		return rows, first, "", filters
	}
	rows = rows[:pageSize]
	nq := url.Values{"cursor": {encodeCursor(cursorOf(rows[len(rows)-1]))}}
	for k, vs := range filters {
		nq[k] = vs
	}
	return rows, first, pageLink(path, nq), filters
}

// encodeCursor and decodeCursor carry a listing's keyset position in a page link, as the
// API's cursors do; a damaged one reads as none.
func encodeCursor(v any) string { return web.EncodeCursor(v) }

func decodeCursor[T any](s string) (T, bool) {
	var v T
	if s == "" {
		return v, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &v) != nil {
		return v, false
	}
	return v, true
}
