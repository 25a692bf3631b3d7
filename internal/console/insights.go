package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/insights"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
)

// insightsForm is the Insights page's form, as typed.
type insightsForm struct {
	From, To, Bucket, Group, Project, Agent, Kind string
}

// seriesChart is a chart of counts per bucket (stacked by series) with its table: the
// buckets that counted anything, and per group when the page groups.
type seriesChart struct {
	ID, Title string
	SVG       template.HTML
	Names     []string
	Rows      []seriesRow
	Empty     int // buckets left out of the table because they counted nothing
	GroupSVG  template.HTML
	Groups    []seriesRow
	Href      string
}

// seriesRow is one line of a series chart's table: a bucket or a group.
type seriesRow struct {
	Label string
	// Key is the bucket's start (RFC 3339) or the group's key ("" for other).
	Key    string
	Other  bool
	Counts []int64
	Total  int64
	Href   string
}

// barChart is a chart of one bar per group, target or kind, with its table.
type barChart struct {
	ID, Title string
	SVG       template.HTML
	Href      string
}

type insightsView struct {
	Form      insightsForm
	Window    insights.Window
	Problem   string
	Buckets   []api.InsightBucket
	Groups    []api.InsightGroup
	RunsEnded seriesChart
	Attempts  seriesChart
	// LostByAgent and LostByRelease are the leases lost per agent and per release.
	LostByAgent, LostByRelease barChart
	LostAgents, LostReleases   []linked[api.InsightSeriesGroup]
	PerRun                     barChart
	PerRunRows                 []linked[api.AttemptsPerRunBin]
	Latency                    barChart
	LatencyRows                []linked[api.ClaimLatencyGroup]
	Calls                      barChart
	CallRows                   []linked[api.CallTargetInsight]
	Decisions                  barChart
	DecisionRows               []linked[api.DecisionKindInsight]
	// Cost is the cost per model; CostRows each model's calls, tokens and cost.
	Cost     barChart
	CostRows []costRow
}

// linked is a table row of an insight with the list of exactly the rows it counts (the
// "other" group's leaves out the named groups: otherLink).
type linked[T any] struct {
	Row  T
	Href string
}

// costRow is one model's usage in the window (the sums of its series).
type costRow struct {
	api.InsightGroupKey
	Calls, Input, Output, CostMicros int64
	// Href lists the calls the row counts.
	Href string
}

func (c *console) insightsPage(ctx echo.Context) error {
	q := ctx.QueryParams()
	f := insightsForm{From: q.Get("from"), To: q.Get("to"), Bucket: q.Get("bucket"), Group: q.Get("group"),
		Project: strings.TrimSpace(q.Get("project")), Agent: strings.TrimSpace(q.Get("agent")), Kind: strings.TrimSpace(q.Get("kind"))}
	v := insightsView{Form: f, Buckets: []api.InsightBucket{api.Bucket5m, api.Bucket1h, api.Bucket1d},
		Groups: []api.InsightGroup{api.GroupProject, api.GroupAgent, api.GroupRelease, api.GroupKind, api.GroupErrorCode}}
	var p api.InsightParams
	var problems []string
	if from, err := parseTime(f.From); err != nil {
		problems = append(problems, "“from” is not a time")
	} else if from != nil {
		p.From = api.Ptr(api.NewTime(*from))
	}
	if to, err := parseTime(f.To); err != nil {
		problems = append(problems, "“to” is not a time")
	} else if to != nil {
		p.To = api.Ptr(api.NewTime(*to))
	}
	if f.Bucket != "" {
		var b api.InsightBucket
		if b.UnmarshalText([]byte(f.Bucket)) != nil {
			problems = append(problems, "bucket must be 5m, 1h or 1d")
		}
		p.Bucket = &b
	}
	var group *api.InsightGroup
	if f.Group != "" {
		var g api.InsightGroup
		if g.UnmarshalText([]byte(f.Group)) != nil {
			problems = append(problems, "group must be project, agent, release, kind or errorCode")
		}
		group = &g
	}
	p.ProjectID, p.AgentID, p.Kind = optional(f.Project), optional(f.Agent), optional(f.Kind)
	rctx, tenant := ctx.Request().Context(), tenantOf(ctx)
	var w insights.Window
	if len(problems) == 0 {
		now, err := c.Insights.Now(rctx, tenant)
		if err != nil {
			return err
		}
		if w, err = insights.Resolve(now, p, group); err != nil {
			e, ok := apperr.As(err)
			if !ok {
				return err
			}
			for _, fe := range e.Fields {
				problems = append(problems, fe.Field+" "+fe.Reason)
			}
		}
	}
	if len(problems) > 0 {
		v.Problem = strings.Join(problems, "; ")
		return c.render(ctx, http.StatusBadRequest, "insights", page{Title: "Insights", Nav: "insights", Data: v})
	}
	v.Window = w
	// The page's reads are one heavy read: the tenant's heavy-read slot and deadline.
	if err := admission.HeavyRead(rctx, func(rctx context.Context) error {
		return c.readInsights(rctx, tenant, w, insights.FilterOf(p), &v)
	}); err != nil {
		return err
	}
	return c.render(ctx, http.StatusOK, "insights", page{Title: "Insights", Nav: "insights", Data: v})
}

// runsLink is the runs list filtered to a time range, the page's filters and a group. For
// ended runs (state "ended") the range is of their end, as the runs-ended insight counts
// them; otherwise of their enqueue. A run's release is its latest attempt's on both sides.
func runsLink(state string, from, to time.Time, filter insights.Filter, group api.InsightGroup, key string) string {
	fromName, toName := "from", "to"
	if state == "ended" {
		fromName, toName = "endedFrom", "endedTo"
	}
	q := windowQuery(fromName, toName, from, to, filter)
	if state != "" {
		q.Set("state", state)
	}
	setGroup(q, group, key)
	return "/ui/runs?" + q.Encode()
}

// attemptsLink is the list of the attempts ended in a time range (in state, "" for the five
// the attempts-ended insight counts) with the page's filters and a group: exactly the rows
// an attempt insight's bar or row counts. An attempt's release is its own.
func attemptsLink(state string, from, to time.Time, filter insights.Filter, group api.InsightGroup, key string) string {
	q := windowQuery("endedFrom", "endedTo", from, to, filter)
	if state != "" {
		q.Set("state", state)
	}
	setGroup(q, group, key)
	return "/ui/attempts?" + q.Encode()
}

// callsLink is the list of the calls started in a time range (byEnd: finished in it and
// reported usage, as the usage insight counts them) with the page's filters and one more
// filter (name, value) when name is not "".
func callsLink(byEnd bool, from, to time.Time, filter insights.Filter, name, value string) string {
	fromName, toName := "startedFrom", "startedTo"
	if byEnd {
		fromName, toName = "endedFrom", "endedTo"
	}
	q := windowQuery(fromName, toName, from, to, filter)
	if byEnd {
		q.Set("reportedUsage", "true")
	}
	if name != "" {
		q.Set(name, value)
	}
	return "/ui/calls?" + q.Encode()
}

// decisionsLink is the decisions list (every status) of the decisions requested in a time
// range, of one kind ("" for every kind), with the page's filters: exactly what the
// decisions insight counts. The page's kind is the run's, runKind on the decisions list.
func decisionsLink(from, to time.Time, filter insights.Filter, kind string) string {
	runKind := filter.Kind
	filter.Kind = nil
	q := windowQuery("requestedFrom", "requestedTo", from, to, filter)
	q.Set("status", "all")
	if runKind != nil {
		q.Set("runKind", *runKind)
	}
	if kind != "" {
		q.Set("kind", kind)
	}
	return "/ui/decisions?" + q.Encode()
}

// windowQuery is a list link's query for a time range (under the list's own names for its
// bounds) and the insights page's filters, which every list takes under the same names.
func windowQuery(fromName, toName string, from, to time.Time, filter insights.Filter) url.Values {
	q := url.Values{}
	q.Set(fromName, from.UTC().Format("2006-01-02T15:04:05.000"))
	q.Set(toName, to.UTC().Format("2006-01-02T15:04:05.000"))
	for name, v := range map[string]*string{"project": filter.ProjectID, "agent": filter.AgentID,
		"kind": filter.Kind, "release": filter.ReleaseID} {
		if v != nil {
			q.Set(name, *v)
		}
	}
	return q
}

// setGroup narrows a list link to one group's key (a group's filter replaces the page's).
// The errorCode group "(none)" (key "") is the rows without an error: hasError=false; the
// release group "(none)" the runs never claimed: hasRelease=false.
func setGroup(q url.Values, group api.InsightGroup, key string) {
	switch name := groupParam[group]; {
	case group == api.GroupErrorCode && key == "":
		q.Set("hasError", "false")
	case group == api.GroupRelease && key == "":
		q.Del("release")
		q.Set("hasRelease", "false")
	case name != "" && key != "":
		q.Set(name, key)
	}
}

// otherLink narrows a list link of a whole chart (every group) to its "other" group: the rows
// of none of the named groups. not is the list filter that leaves out a group's key (one
// item per named group); a named "(none)" group (key "") is left out by flag=true (the rows
// with a value), so a row without a value stays only when "(none)" is itself in "other".
func otherLink(link, not, flag string, named []string) string {
	path, raw, _ := strings.Cut(link, "?")
	q, _ := url.ParseQuery(raw)
	for _, key := range named {
		if key == "" {
			q.Set(flag, "true")
		} else {
			q.Add(not, key)
		}
	}
	return path + "?" + q.Encode()
}

// namedKeys are the keys of the groups an insight names (all but "other").
func namedKeys[G interface{ GroupKey() api.InsightGroupKey }](groups []G) []string {
	var named []string
	for _, g := range groups {
		if k := g.GroupKey(); !k.Other {
			named = append(named, k.Key)
		}
	}
	return named
}

// notParam is the list filter that leaves out the groups of each grouping, and hasParam the
// one that leaves out the rows without a value (a named "(none)" group).
var (
	notParam = map[api.InsightGroup]string{api.GroupProject: "notProject", api.GroupAgent: "notAgent", api.GroupKind: "notKind",
		api.GroupRelease: "notRelease", api.GroupErrorCode: "notErrorCode"}
	hasParam = map[api.InsightGroup]string{api.GroupRelease: "hasRelease", api.GroupErrorCode: "hasError"}
)

// groupParam is the list filter of each grouping.
var groupParam = map[api.InsightGroup]string{api.GroupProject: "project", api.GroupAgent: "agent", api.GroupKind: "kind",
	api.GroupRelease: "release", api.GroupErrorCode: "errorCode"}

// linker is the list of what a chart counts in a time range and group.
type linker func(from, to time.Time, group api.InsightGroup, key string) string

func runsLinker(state string, f insights.Filter) linker {
	return func(from, to time.Time, group api.InsightGroup, key string) string {
		return runsLink(state, from, to, f, group, key)
	}
}

func attemptsLinker(state string, f insights.Filter) linker {
	return func(from, to time.Time, group api.InsightGroup, key string) string {
		return attemptsLink(state, from, to, f, group, key)
	}
}

// latencyLink is the runs list of what claim latency counts: the runs queued in the range
// and claimed (at least one attempt), with the page's filters and a group. Claim latency
// takes a run's release from its first claim, the runs list's release filter from its
// latest attempt: the release, filtered or grouped, goes as firstRelease.
func latencyLink(from, to time.Time, f insights.Filter, group api.InsightGroup, key string) string {
	release := f.ReleaseID
	f.ReleaseID = nil
	if group == api.GroupRelease {
		group, release = "", &key
	}
	link := attemptCountLink(runsLink("", from, to, f, group, key), 1, true)
	if release != nil {
		link += "&firstRelease=" + url.QueryEscape(*release)
	}
	return link
}

// attemptCountLink narrows a runs list link to the runs with n attempts (orMore: at least n).
func attemptCountLink(link string, n int, orMore bool) string {
	link += "&attemptsMin=" + strconv.Itoa(n)
	if !orMore {
		link += "&attemptsMax=" + strconv.Itoa(n)
	}
	return link
}

func (c *console) readInsights(ctx context.Context, tenant string, w insights.Window, f insights.Filter, v *insightsView) error {
	st := c.Insights
	runsEnded, err := st.RunsEnded(ctx, tenant, w, f)
	if err != nil {
		return err
	}
	v.RunsEnded = seriesChartOf("runs-ended", "Runs ended, by outcome", api.RunOutcome("").EnumValues(), runsLinker("ended", f), w, runsEnded)
	ungrouped := w
	ungrouped.GroupBy = ""
	att, err := st.AttemptsEnded(ctx, tenant, w, f)
	if err != nil {
		return err
	}
	v.Attempts = seriesChartOf("attempts-ended", "Attempts ended, by state", api.AttemptState(0).EnumValues()[1:], attemptsLinker("", f), w, att)

	for _, g := range []api.InsightGroup{api.GroupAgent, api.GroupRelease} {
		gw := ungrouped
		gw.GroupBy = g
		lost, err := st.LeasesLost(ctx, tenant, gw, f)
		if err != nil {
			return err
		}
		var bars []chartBar
		var table []linked[api.InsightSeriesGroup]
		lostLink := attemptsLinker(api.AttemptLost.String(), f)
		for _, grp := range lost.Groups {
			b := chartBar{Label: groupLabel(grp.InsightGroupKey), Parts: []chartPart{{Name: "lost", Value: float64(grp.Total)}}, Rows: grp.Total,
				Href: lostLink(w.From, w.To, g, grp.Key)}
			if grp.Other {
				b.Href = otherLink(lostLink(w.From, w.To, "", ""), notParam[g], hasParam[g], namedKeys(lost.Groups))
			}
			bars = append(bars, b)
			table = append(table, linked[api.InsightSeriesGroup]{Row: grp, Href: b.Href})
		}
		chart := barChart{ID: "lost-by-" + string(g), Title: "Leases lost, by " + string(g),
			SVG: rows("Leases lost by "+string(g), bars), Href: lostLink(w.From, w.To, "", "")}
		if g == api.GroupAgent {
			v.LostByAgent, v.LostAgents = chart, table
		} else {
			v.LostByRelease, v.LostReleases = chart, table
		}
	}

	per, err := st.AttemptsPerRun(ctx, tenant, ungrouped, f)
	if err != nil {
		return err
	}
	var bars []chartBar
	if len(per.Groups) > 0 {
		for _, b := range per.Groups[0].Counts {
			href := attemptCountLink(runsLink("ended", w.From, w.To, f, "", ""), b.Attempts, b.Attempts == api.AttemptsPerRunCap)
			v.PerRunRows = append(v.PerRunRows, linked[api.AttemptsPerRunBin]{Row: b, Href: href})
			bars = append(bars, chartBar{Label: attemptsLabel(b.Attempts), Parts: []chartPart{{Name: "runs", Value: float64(b.Runs)}},
				Href: href, Rows: b.Runs})
		}
	}
	v.PerRun = barChart{ID: "per-run", Title: "Attempts per finished run", SVG: rows("Runs by the attempts they took", bars),
		Href: runsLink("ended", w.From, w.To, f, "", "")}

	lat, err := st.ClaimLatency(ctx, tenant, w, f)
	if err != nil {
		return err
	}
	v.LatencyRows, bars = nil, nil
	// Claim latency's "other" by release leaves out the named first claims' releases (a
	// claimed run always has one: no "(none)").
	latencyNot := notParam[w.GroupBy]
	if w.GroupBy == api.GroupRelease {
		latencyNot = "notFirstRelease"
	}
	for _, g := range lat.Groups {
		label := groupLabel(g.InsightGroupKey)
		if w.GroupBy == "" {
			label = "all runs"
		}
		// The runs queued in the window that were claimed (at least one attempt). Grouped by
		// release, claim latency counts a run under its first claim's release (the runs
		// list's release is the latest attempt's, so the link names the first).
		href := latencyLink(w.From, w.To, f, w.GroupBy, g.Key)
		if w.GroupBy != "" && g.Other {
			href = otherLink(latencyLink(w.From, w.To, f, "", ""), latencyNot, hasParam[w.GroupBy], namedKeys(lat.Groups))
		}
		v.LatencyRows = append(v.LatencyRows, linked[api.ClaimLatencyGroup]{Row: g, Href: href})
		bars = append(bars, chartBar{Label: label, Parts: []chartPart{
			{Name: "p50", Value: msOf(g.Latency.P50Ms)}, {Name: "p95", Value: msOf(g.Latency.P95Ms)}},
			Href: href, Rows: g.Latency.Count, Format: msLabel})
	}
	v.Latency = barChart{ID: "claim-latency", Title: "Time from enqueue to first claim (p50 and p95)",
		SVG: pairedRows("Time to first claim, p50 and p95", bars, msLabel), Href: latencyLink(w.From, w.To, f, "", "")}

	cs, err := st.Calls(ctx, tenant, w, f)
	if err != nil {
		return err
	}
	v.CallRows, bars = nil, nil
	for _, t := range cs.Targets {
		href := callsLink(false, w.From, w.To, f, "target", t.Key)
		if t.Other {
			href = otherLink(callsLink(false, w.From, w.To, f, "", ""), "notTarget", "", namedKeys(cs.Targets))
		}
		v.CallRows = append(v.CallRows, linked[api.CallTargetInsight]{Row: t, Href: href})
		bars = append(bars, chartBar{Label: groupLabel(t.InsightGroupKey), Parts: []chartPart{
			{Name: "ok", Value: float64(t.Calls - t.Failed)}, {Name: "failed", Value: float64(t.Failed)}},
			Href: href, Rows: t.Calls})
	}
	v.Calls = barChart{ID: "calls", Title: "Calls per target", SVG: rows("Calls per target, failed in red", bars),
		Href: callsLink(false, w.From, w.To, f, "", "")}

	usage, err := st.Usage(ctx, tenant, ungrouped, f, true)
	if err != nil {
		return err
	}
	v.CostRows, bars = nil, nil
	for _, g := range usage.Groups {
		r := costRow{InsightGroupKey: g.InsightGroupKey}
		for _, se := range g.Series {
			switch se.Name {
			case "calls":
				r.Calls = se.Total
			case "inputTokens":
				r.Input = se.Total
			case "outputTokens":
				r.Output = se.Total
			case "costMicros":
				r.CostMicros = se.Total
			}
		}
		// The calls that reported usage, by their end; "(no model)" is hasModel=false, "other"
		// the calls of none of the named models.
		switch {
		case g.Other:
			r.Href = otherLink(callsLink(true, w.From, w.To, f, "", ""), "notModel", "hasModel", namedKeys(usage.Groups))
		case g.Key == "":
			r.Href = callsLink(true, w.From, w.To, f, "hasModel", "false")
		default:
			r.Href = callsLink(true, w.From, w.To, f, "model", g.Key)
		}
		v.CostRows = append(v.CostRows, r)
		bars = append(bars, chartBar{Label: groupLabel(g.InsightGroupKey), Parts: []chartPart{{Name: "cost", Value: float64(r.CostMicros)}},
			Href: r.Href, Rows: r.Calls})
	}
	v.Cost = barChart{ID: "cost", Title: "Cost per model (micro-units)", SVG: rows("Cost of the calls per model, in micro-units", bars),
		Href: callsLink(true, w.From, w.To, f, "", "")}

	ds, err := st.Decisions(ctx, tenant, w, f)
	if err != nil {
		return err
	}
	v.DecisionRows, bars = nil, nil
	for _, k := range ds.Kinds {
		href := decisionsLink(w.From, w.To, f, k.Kind.String())
		v.DecisionRows = append(v.DecisionRows, linked[api.DecisionKindInsight]{Row: k, Href: href})
		bars = append(bars, chartBar{Label: k.Kind.String(), Parts: []chartPart{{Name: "answered", Value: float64(k.Answered)},
			{Name: "pending", Value: float64(k.Pending)}, {Name: "expired", Value: float64(k.Expired)},
			{Name: "cancelled", Value: float64(k.Cancelled)}},
			Href: href, Rows: k.Requested})
	}
	v.Decisions = barChart{ID: "decisions", Title: "Decisions, by kind", SVG: rows("Decisions requested by kind: answered, pending, expired, cancelled", bars),
		Href: decisionsLink(w.From, w.To, f, "")}
	return nil
}

// msLabel is how a millisecond value reads beside its bar.
func msLabel(v float64) string { return fmtDuration(time.Duration(v) * time.Millisecond) }

func msOf(p *int64) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}

func attemptsLabel(n int) string {
	switch {
	case n == api.AttemptsPerRunCap:
		return fmt.Sprintf("%d or more attempts", n)
	case n == 1:
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func groupLabel(k api.InsightGroupKey) string {
	switch {
	case k.Other:
		return "other"
	case k.Key == "":
		return "(none)"
	}
	return k.Key
}

// seriesChartOf draws a series insight: the buckets' totals across groups, stacked by
// series, and, when grouped, each group's totals.
// names are the series when no group counted anything; link lists what a bar or row counts.
func seriesChartOf(id, title string, names []string, link linker, w insights.Window, s api.InsightSeries) seriesChart {
	ch := seriesChart{ID: id, Title: title, Href: link(w.From, w.To, "", "")}
	// Every group has every series, in one order; with no group, the insight's own names.
	if len(s.Groups) > 0 {
		for _, sr := range s.Groups[0].Series {
			ch.Names = append(ch.Names, sr.Name)
		}
	} else {
		ch.Names = names
	}
	daily := w.Bucket == api.Bucket1d
	withDate := w.To.Sub(w.From) > 24*time.Hour || w.From.YearDay() != w.To.Add(-time.Millisecond).YearDay()
	bars := make([]chartBar, len(s.Buckets))
	for i, start := range s.Buckets {
		end := start.Add(w.Width())
		row := seriesRow{Label: bucketLabel(start.Time, daily, withDate), Key: start.String(), Counts: make([]int64, len(ch.Names)),
			Href: link(start.Time, end, "", "")}
		for _, g := range s.Groups {
			for j, sr := range g.Series {
				row.Counts[j] += sr.Counts[i]
				row.Total += sr.Counts[i]
			}
		}
		bars[i] = chartBar{Label: row.Label, Href: row.Href, Rows: row.Total}
		for j, name := range ch.Names {
			bars[i].Parts = append(bars[i].Parts, chartPart{Name: name, Value: float64(row.Counts[j])})
		}
		if row.Total > 0 {
			ch.Rows = append(ch.Rows, row)
		} else {
			ch.Empty++
		}
	}
	first, last := "", ""
	if len(s.Buckets) > 0 {
		first, last = bucketLabel(s.Buckets[0].Time, daily, true), bucketLabel(w.To, daily, true)
	}
	ch.SVG = columns(title+" per "+string(w.Bucket)+" bucket", bars, first, last)
	if w.GroupBy != "" {
		var gbars []chartBar
		for _, g := range s.Groups {
			row := seriesRow{Label: groupLabel(g.InsightGroupKey), Key: g.Key, Other: g.Other, Total: g.Total,
				Href: link(w.From, w.To, w.GroupBy, g.Key)}
			if g.Other {
				row.Href = otherLink(link(w.From, w.To, "", ""), notParam[w.GroupBy], hasParam[w.GroupBy], namedKeys(s.Groups))
			}
			gb := chartBar{Label: row.Label, Href: row.Href, Rows: g.Total}
			for _, sr := range g.Series {
				row.Counts = append(row.Counts, sr.Total)
				gb.Parts = append(gb.Parts, chartPart{Name: sr.Name, Value: float64(sr.Total)})
			}
			ch.Groups = append(ch.Groups, row)
			gbars = append(gbars, gb)
		}
		ch.GroupSVG = rows(title+" by "+string(w.GroupBy), gbars)
	}
	return ch
}

// sparkView is the overview's 24-hour sparkline of runs ended by outcome.
type sparkView struct {
	SVG   template.HTML
	Names []string
	Rows  []seriesRow
}

func (c *console) readSparkline(ctx context.Context, tenant string) (sparkView, error) {
	now, err := c.Insights.Now(ctx, tenant)
	if err != nil {
		return sparkView{}, err
	}
	w, err := insights.Resolve(now, api.InsightParams{}, nil)
	if err != nil {
		return sparkView{}, err
	}
	s, err := c.Insights.RunsEnded(ctx, tenant, w, insights.Filter{})
	if err != nil {
		return sparkView{}, err
	}
	ch := seriesChartOf("spark", "Runs ended in the last 24 hours", api.RunOutcome("").EnumValues(), runsLinker("ended", insights.Filter{}), w, s)
	var bars []chartBar
	for i, start := range s.Buckets {
		b := chartBar{Label: bucketLabel(start.Time, false, false)}
		for _, g := range s.Groups {
			for j, sr := range g.Series {
				if len(b.Parts) <= j {
					b.Parts = append(b.Parts, chartPart{Name: sr.Name})
				}
				b.Parts[j].Value += float64(sr.Counts[i])
			}
		}
		bars = append(bars, b)
	}
	return sparkView{SVG: sparkline("Runs ended in the last 24 hours, by outcome, per hour", bars), Names: ch.Names, Rows: ch.Rows}, nil
}
