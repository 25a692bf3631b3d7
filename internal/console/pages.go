package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/delegations"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/overview"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// pageSize is the rows a listing shows at once.
const pageSize = 50

type signinView struct {
	Token   string
	Message string
}

// signinPage shows the sign-in form. Before a session exists there is no session token to
// carry, so the form carries a random value that must equal a cookie set with it (double
// submit): a page of another site can set neither.
func (c *console) signinPage(ctx echo.Context) error {
	return c.renderSignin(ctx, http.StatusOK, "")
}

func (c *console) renderSignin(ctx echo.Context, status int, msg string) error {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	c.setCookie(ctx, signinCookie, tok, 600)
	return c.render(ctx, status, "signin", page{Title: "Sign in", Data: signinView{Token: tok, Message: msg}})
}

func (c *console) signin(ctx echo.Context) error {
	r := ctx.Request()
	ck, err := r.Cookie(signinCookie)
	form := formValue(ctx, "signin")
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) != 1 {
		return c.renderSignin(ctx, http.StatusForbidden, "The sign-in form expired. Please try again.")
	}
	// The API's key check, with its cache and its budget of failures per client address.
	p, err := c.Auth.Check(r.Context(), ctx.RealIP(), formValue(ctx, "key"))
	if apperr.Is(err, api.CodeRateLimited) {
		ctx.Response().Header().Set("Retry-After", "60")
		return c.renderSignin(ctx, http.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait a minute and try again.")
	}
	if apperr.Is(err, api.CodeUnauthorized) {
		return c.renderSignin(ctx, http.StatusUnauthorized, "That key is not valid: it is unknown, revoked or mistyped.")
	}
	if err != nil {
		return err
	}
	if p.Role != tenancy.RoleAdmin {
		return c.renderSignin(ctx, http.StatusForbidden,
			"That is a runtime key. The console needs an admin key (ledger keys create --role admin).")
	}
	value, _, err := c.sessions.create(r.Context(), p)
	if err != nil {
		return err
	}
	c.setCookie(ctx, signinCookie, "", -1)
	c.setCookie(ctx, cookieName, value, int(c.SessionTTL/time.Second))
	return ctx.Redirect(http.StatusSeeOther, "/ui/")
}

func (c *console) signout(ctx echo.Context) error {
	if ck, err := ctx.Request().Cookie(cookieName); err == nil {
		if err := c.sessions.end(ctx.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	c.setCookie(ctx, cookieName, "", -1)
	return ctx.Redirect(http.StatusSeeOther, "/ui/signin")
}

// overviewView is the overview with the numbers the template shows.
type overviewView struct {
	overview.Tenant
	// Spark is the last 24 hours of ended runs (the full page only, not its live refresh).
	Spark    *sparkView
	Bands    []bandRow
	ClaimLag time.Duration
	Projects []projectRow
}

type bandRow struct {
	Name           string
	Queued, Leased int64
}

type projectRow struct {
	overview.Project
	ClaimLag time.Duration
}

func (c *console) readOverview(ctx echo.Context) (overviewView, error) {
	t, err := c.Overview.Tenant(ctx.Request().Context(), tenantOf(ctx))
	if err != nil {
		return overviewView{}, err
	}
	v := overviewView{Tenant: t, ClaimLag: t.ClaimLag(t.At)}
	for b := 0; b < 3; b++ {
		v.Bands = append(v.Bands, bandRow{Name: overview.BandName(b), Queued: t.Queued[b], Leased: t.Leased[b]})
	}
	for _, p := range t.Projects {
		v.Projects = append(v.Projects, projectRow{Project: p, ClaimLag: p.ClaimLag(t.At)})
	}
	return v, nil
}

func (c *console) overviewPage(ctx echo.Context) error {
	v, err := c.readOverview(ctx)
	if err != nil {
		return err
	}
	spark, err := c.readSparkline(ctx.Request().Context(), tenantOf(ctx))
	if err != nil {
		return err
	}
	v.Spark = &spark
	return c.render(ctx, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: v})
}

// overviewLive is the overview's numbers alone, for the page's periodic refresh.
func (c *console) overviewLive(ctx echo.Context) error {
	v, err := c.readOverview(ctx)
	if err != nil {
		return err
	}
	return c.renderTemplate(ctx, http.StatusOK, "overview", "live", page{Data: v})
}

// runsFilter is the Runs page's form, as typed.
type runsFilter struct {
	State, Band, Project, Subject, Kind, Agent, From, To string
	// Outcome, ErrorCode, Release, Tag and the ended range narrow to what an insight counts
	// (its links set them).
	Outcome, ErrorCode, Release, Tag, EndedFrom, EndedTo string
	// AttemptsMin and AttemptsMax narrow by the run's attempts (the attempts-per-run and
	// claim-latency insights link with them).
	AttemptsMin, AttemptsMax string
	// FirstRelease is the release of the run's first claim (claim latency by release links
	// with it).
	FirstRelease string
	// HasError "false" lists the runs without an error (the errorCode insight's "(none)").
	HasError string
	// HasRelease "false" lists the runs never claimed (the release insight's "(none)").
	HasRelease string
	// Not are the not* lists (notProject, notAgent, notKind, notRelease, notErrorCode,
	// notFirstRelease): an insight's "other" group.
	Not []exclusion
}

type runsView struct {
	Filter runsFilter
	Runs   []runs.Run
	First  string // link to the first page, with the filters
	Next   string // link to the next page ("" on the last)
	// Later says this is not the first page: only then does it link to the newest.
	Later   bool
	Problem string
	// Query is the filters as a query string (the bulk form's "all matching this filter").
	Query string
}

type runCursor struct {
	QueuedAt time.Time `json:"q"`
	RunID    uuid.UUID `json:"r"`
}

// parseTime reads a time from a form: RFC 3339, or the datetime-local form (taken as UTC).
func parseTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, errors.New("not a time")
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (c *console) runsPage(ctx echo.Context) error {
	var err error
	q := ctx.QueryParams()
	f := runsFilter{State: q.Get("state"), Band: q.Get("band"), Project: strings.TrimSpace(q.Get("project")), Subject: strings.TrimSpace(q.Get("subject")),
		Kind: strings.TrimSpace(q.Get("kind")), Agent: strings.TrimSpace(q.Get("agent")), From: q.Get("from"), To: q.Get("to"),
		Outcome: q.Get("outcome"), ErrorCode: strings.TrimSpace(q.Get("errorCode")), Release: strings.TrimSpace(q.Get("release")),
		Tag: strings.TrimSpace(q.Get("tag")), EndedFrom: q.Get("endedFrom"), EndedTo: q.Get("endedTo"),
		AttemptsMin: strings.TrimSpace(q.Get("attemptsMin")), AttemptsMax: strings.TrimSpace(q.Get("attemptsMax")),
		FirstRelease: strings.TrimSpace(q.Get("firstRelease")), HasError: q.Get("hasError"),
		HasRelease: q.Get("hasRelease")}
	v := runsView{Filter: f}
	lf := runs.ListFilter{Limit: pageSize + 1, Subject: optional(f.Subject), ProjectID: optional(f.Project),
		Kind: optional(f.Kind), AgentID: optional(f.Agent), ErrorCode: optional(f.ErrorCode), ReleaseID: optional(f.Release),
		Tag: optional(f.Tag), FirstReleaseID: optional(f.FirstRelease)}
	var problems []string
	var not map[string][]string
	not, v.Filter.Not = exclusions(q, &problems, "notProject", "notAgent", "notKind", "notRelease", "notErrorCode", "notFirstRelease")
	lf.NotProjectIDs, lf.NotAgentIDs, lf.NotKinds = not["notProject"], not["notAgent"], not["notKind"]
	lf.NotReleaseIDs, lf.NotErrorCodes, lf.NotFirstReleaseIDs = not["notRelease"], not["notErrorCode"], not["notFirstRelease"]
	if lf.HasError, err = parseFlag(f.HasError, f.ErrorCode != ""); err != nil {
		problems = append(problems, "hasError "+err.Error())
	}
	if lf.HasRelease, err = parseFlag(f.HasRelease, f.Release != ""); err != nil {
		problems = append(problems, "hasRelease "+err.Error())
	}
	if f.Outcome != "" {
		o := api.RunOutcome(f.Outcome)
		if !o.Valid() {
			problems = append(problems, "outcome must be one of "+strings.Join(o.EnumValues(), ", "))
		}
		lf.Outcome = &o
	}
	if lf.EndedFrom, err = parseTime(f.EndedFrom); err != nil {
		problems = append(problems, "“ended from” is not a time")
	}
	for _, n := range []struct {
		typed, name string
		into        **int
	}{{f.AttemptsMin, "at least", &lf.AttemptsMin}, {f.AttemptsMax, "at most", &lf.AttemptsMax}} {
		if n.typed == "" {
			continue
		}
		if v, err := strconv.Atoi(n.typed); err != nil || v < 0 || v > 1_000_000 {
			problems = append(problems, "“attempts, "+n.name+"” is not a number from 0 to 1000000")
		} else {
			*n.into = &v
		}
	}
	if lf.EndedTo, err = parseTime(f.EndedTo); err != nil {
		problems = append(problems, "“ended before” is not a time")
	}
	if f.State != "" {
		st, ok := parseEnum[api.RunState](f.State)
		if !ok {
			problems = append(problems, "state must be queued, leased or ended")
		}
		lf.State = &st
	}
	if f.Band != "" {
		b, ok := parseEnum[api.Band](f.Band)
		if !ok {
			problems = append(problems, "band must be interactive, batch or background")
		}
		lf.Band = &b
	}
	from, err := parseTime(f.From)
	if err != nil {
		problems = append(problems, "“queued from” is not a time")
	}
	to, err := parseTime(f.To)
	if err != nil {
		problems = append(problems, "“queued before” is not a time")
	}
	lf.QueuedFrom = from
	if to != nil {
		lf.AfterQueuedAt, lf.AfterRunID = to, uuid.Nil // before "to", exclusive
	}
	rc, later, ok := pageCursor[runCursor](q, &problems)
	v.Later = later
	if ok && (to == nil || rc.QueuedAt.Before(*to)) {
		lf.AfterQueuedAt, lf.AfterRunID = &rc.QueuedAt, rc.RunID
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "runs", page{Title: "Runs", Nav: "runs", Data: v})
	}
	rs, err := c.Runs.List(ctx.Request().Context(), tenantOf(ctx), lf)
	if err != nil {
		return err
	}
	var filters url.Values
	rs, v.First, v.Next, filters = keysetPage("/ui/runs", q, rs, func(r runs.Run) runCursor {
		return runCursor{QueuedAt: r.QueuedAt, RunID: r.RunID}
	})
	v.Query = filters.Encode()
	v.Runs = rs
	return c.render(ctx, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Data: v})
}

type runView struct {
	Run      runs.Run
	Attempts []attempts.Attempt
	// Tags are the run's tags, each linked to the runs list of its tag.
	Tags []string
	// Delegations are every attempt's delegated children, oldest first.
	Delegations []delegations.Delegation
	// Chain is the continuation chain, oldest first, with this run in it.
	Chain        []runs.Run
	ChainTrimmed bool
	// ChildrenTrimmed says the run has more delegated children than the page lists.
	ChildrenTrimmed bool
	// CanCancel and CanContinue say which action the page offers; Confirm is the one it
	// asks to confirm ("cancel" or "continue"); Done the one just done; Message why one was
	// refused.
	CanCancel, CanContinue bool
	Confirm, Done, Message string
	// ForkPoints are the checkpoints a fork may start from (none: no fork is offered).
	ForkPoints []forkPoint
	// ForkKey is the fork confirmation's idempotency key, new on each confirmation page,
	// so the form sent twice (a double click, a resend) makes one fork.
	ForkKey string
	// Waiting lists what a parked run waits for (DESIGN.md section 5b): its open
	// decisions and children.
	Waiting []waitingRow
	// Usage is what the calls of the run's attempts reported: tokens and cost.
	Usage calls.Totals
}

// waitingRow is one open condition of a parked run: a decision (with when it was asked)
// or a child run.
type waitingRow struct {
	Decision bool
	ID       uuid.UUID
	// Since is when the decision was asked, or when the run parked on the child.
	Since time.Time
}

// readWaiting reads a queued run's open conditions, each decision with when it was asked.
func (c *console) readWaiting(ctx context.Context, tenant string, run runs.Run) ([]waitingRow, error) {
	if run.State != api.RunQueued {
		return nil, nil
	}
	ws, err := c.Runs.WaitsOf(ctx, tenant, run.RunID)
	if err != nil || len(ws) == 0 {
		return nil, err
	}
	out := make([]waitingRow, 0, len(ws))
	for _, w := range ws {
		row := waitingRow{Decision: w.Kind == runs.WaitDecision, ID: w.TargetID, Since: w.CreatedAt}
		if row.Decision {
			if d, err := c.Decisions.Get(ctx, tenant, w.TargetID); err == nil {
				row.Since = d.RequestedAt
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// chainLimit bounds how far the run page follows a continuation chain each way.
const chainLimit = 20

// childrenLimit bounds the delegated children the run page lists, over all its attempts
// (each attempt's timeline lists all of its own).
const childrenLimit = 100

func (c *console) pathUUID(ctx echo.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(ctx.Param(name))
	if err != nil {
		return uuid.Nil, apperr.New(api.CodeNotFound, "no such page")
	}
	return id, nil
}

func (c *console) runPage(ctx echo.Context) error { return c.renderRun(ctx, http.StatusOK, "") }

// renderRun renders the run page of the path's run as it is now, with message (why an
// action was refused) when not empty.
func (c *console) renderRun(ctx echo.Context, status int, message string) error {
	id, err := c.pathUUID(ctx, "runId")
	if err != nil {
		return c.notFound(ctx)
	}
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	run, err := c.Runs.Get(rctx, tenant, id)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	v := runView{Run: run, Message: message, CanCancel: run.State != api.RunEnded, CanContinue: run.State == api.RunEnded && !run.NoAttemptLeft()}
	if len(run.Tags) > 0 {
		if err := json.Unmarshal(run.Tags, &v.Tags); err != nil {
			return fmt.Errorf("read run tags: %w", err)
		}
	}
	if message == "" && ctx.Request().Method == http.MethodGet {
		v.Confirm, v.Done = runConfirm(ctx, run), ctx.QueryParam("done")
	}
	items, err := c.History.List(rctx, tenant, history.Filter{RunID: &id, Limit: 500})
	if err != nil {
		return err
	}
	for _, it := range items {
		v.Attempts = append(v.Attempts, it.Attempt)
	}
	v.ForkPoints = forkPoints(v.Attempts)
	if v.Confirm == "fork" && len(v.ForkPoints) == 0 {
		v.Confirm = ""
	}
	if v.Confirm == "fork" {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		v.ForkKey = forkKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	}
	// One read each, whatever the number of attempts or the length of the chain.
	if v.Delegations, err = c.Delegations.ListByRun(rctx, tenant, id, childrenLimit+1); err != nil {
		return err
	}
	if len(v.Delegations) > childrenLimit {
		v.Delegations, v.ChildrenTrimmed = v.Delegations[:childrenLimit], true
	}
	if v.Chain, v.ChainTrimmed, err = c.Runs.Chain(rctx, tenant, id, chainLimit); err != nil {
		return c.orNotFound(ctx, err)
	}
	if v.Waiting, err = c.readWaiting(rctx, tenant, run); err != nil {
		return err
	}
	if v.Usage, err = c.Calls.RunUsage(rctx, tenant, id); err != nil {
		return err
	}
	return c.render(ctx, status, "run", page{Title: "Run " + run.Subject, Nav: "runs", Data: v})
}

type timelineRow struct {
	Kind     string
	At       time.Time
	Sequence *int
	Summary  string
	Status   string
	Duration string
	Link     string
}

type attemptView struct {
	Attempt  attempts.Attempt
	Timeline []timelineRow
	Next     string
	// Failure is the error the attempt ended with; FailureDetails its details indented
	// for reading (the stack an SDK Worker sends).
	Failure        *attempts.Failure
	FailureDetails string
	// Usage is what the attempt's calls reported: tokens and cost.
	Usage calls.Totals
}

type timelineCursor struct {
	At   time.Time `json:"t"`
	Kind int       `json:"k"`
	Seq  int       `json:"s"`
	ID   uuid.UUID `json:"i"`
}

// timelinePage is how many timeline entries the attempt page shows at once.
const timelinePage = 200

func (c *console) attemptPage(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "attemptId")
	if err != nil {
		return c.notFound(ctx)
	}
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	a, err := c.History.Get(rctx, tenant, id)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	var after *history.TimelineCursor
	if tc, ok := decodeCursor[timelineCursor](ctx.QueryParam("cursor")); ok {
		after = &history.TimelineCursor{At: tc.At, Kind: tc.Kind, Sequence: tc.Seq, ID: tc.ID}
	}
	entries, err := c.History.Timeline(rctx, tenant, id, after, timelinePage+1)
	if err != nil {
		return err
	}
	v := attemptView{Attempt: a, Failure: a.Failure()}
	if v.Failure != nil && v.Failure.Details != "" {
		var b bytes.Buffer
		if json.Indent(&b, []byte(v.Failure.Details), "", "  ") == nil {
			v.FailureDetails = b.String()
		} else {
			v.FailureDetails = v.Failure.Details
		}
	}
	if v.Usage, err = c.Calls.AttemptUsage(rctx, tenant, id); err != nil {
		return err
	}
	if len(entries) > timelinePage {
		entries = entries[:timelinePage]
		tc := entries[len(entries)-1].Cursor()
		v.Next = pageLink("/ui/attempts/"+id.String(), url.Values{"cursor": {encodeCursor(timelineCursor{At: tc.At, Kind: tc.Kind, Seq: tc.Sequence, ID: tc.ID})}})
	}
	for _, e := range entries {
		if e.Kind == api.TimelineEnd {
			// The last entry says how the attempt ended, as the API's timeline does.
			v.Timeline = append(v.Timeline, endRowOf(a))
			continue
		}
		v.Timeline = append(v.Timeline, timelineRowOf(e))
	}
	return c.render(ctx, http.StatusOK, "attempt", page{Title: "Attempt", Nav: "runs", Data: v})
}

func timelineRowOf(e history.TimelineEntry) timelineRow {
	row := timelineRow{Kind: e.Kind.String(), At: e.At, Sequence: e.Sequence}
	switch it := e.Item.(type) {
	case history.Checkpoint:
		row.Summary = "phase " + it.Phase.String() + " · state " + it.AdapterStateRef
		// The phase is in the summary; the status says what the entry is good for.
		row.Status = "resumable"
	case history.Call:
		row.Summary = it.Kind.String() + " " + it.Target
		row.Status = it.Status.String()
		if it.EndedAt != nil {
			row.Duration = fmtDuration(it.EndedAt.Sub(it.StartedAt))
		} else {
			row.Duration = "open"
		}
	case history.Decision:
		row.Summary = it.Kind.String() + " decision"
		if it.Recommendation != nil {
			row.Summary += " · recommends " + *it.Recommendation
		}
		row.Status = it.Status.String()
		row.Link = "/ui/decisions/" + it.DecisionID.String()
	case history.Delegation:
		row.Summary = "delegated to " + it.ChildAgentID + ": " + it.Purpose
		row.Status = it.Status.String()
		row.Link = "/ui/runs/" + it.ChildRunID.String()
	}
	return row
}

// endRowOf is the timeline's last line: how the attempt ended, and by whom.
func endRowOf(a attempts.Attempt) timelineRow {
	row := timelineRow{Kind: "end", At: *a.EndedAt, Status: a.State.String(),
		Duration: fmtDuration(a.EndedAt.Sub(a.StartedAt))}
	switch a.State {
	case api.AttemptReleased:
		row.Summary = "released: the holder gave the run back"
	case api.AttemptParked:
		row.Summary = "parked: the holder parked the run to wait for decisions, children or a time (no attempt spent)"
	case api.AttemptLost:
		row.Summary = fmt.Sprintf("lost: the lease (epoch %d, lease %s) expired and the reaper took the run back", a.FencingToken, a.LeaseID)
	case api.AttemptCancelled:
		row.Summary = "cancelled: the holder completed it as cancelled"
		if a.CancellationObservedAt != nil {
			row.Summary += " after seeing the cancel request at " + a.CancellationObservedAt.UTC().Format("15:04:05.000")
		}
	default:
		row.Summary = "completed " + a.State.String() + " by the holder"
	}
	if f := a.Failure(); f != nil && a.State != api.AttemptLost {
		row.Summary += " · " + f.Code
		if f.Message != "" {
			row.Summary += ": " + f.Message
		}
	}
	return row
}

func (c *console) notFound(ctx echo.Context) error {
	return c.render(ctx, http.StatusNotFound, "error", page{Title: "Not found",
		Data: errorView{Message: "There is nothing here for your tenant. It may never have existed, or retention removed it."}})
}
