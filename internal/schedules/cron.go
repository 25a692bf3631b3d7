package schedules

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ledger-dev/ledger/api"
)

// parser reads the five-field form (minute to weekday, with ranges, steps, lists and month
// and weekday names) and the @descriptors; seconds and CRON_TZ= prefixes are not part of
// the wire (the time zone is its own member).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron is a parsed expression in its time zone.
type Cron struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

// ParseCron parses expr in the IANA zone tz. What is wrong is answered as field errors
// named cron and timezone (prefixed by prefix).
func ParseCron(expr, tz string) (Cron, []api.FieldError) {
	var (
		c    Cron
		errs []api.FieldError
	)
	sched, err := parser.Parse(expr)
	if err != nil {
		errs = append(errs, api.FieldError{Field: "cron", Reason: "is not a five-field cron expression: " + err.Error()})
	} else if spec, ok := sched.(*cron.SpecSchedule); !ok {
		// @every is a ConstantDelaySchedule: an interval, not a calendar rule.
		errs = append(errs, api.FieldError{Field: "cron", Reason: "must be a calendar expression (@every is not accepted)"})
	} else {
		c.spec = spec
	}
	loc, err := time.LoadLocation(tz)
	switch {
	case tz == "" || tz == "Local":
		// "Local" is this machine's zone, not an IANA name; "" would be UTC silently.
		errs = append(errs, api.FieldError{Field: "timezone", Reason: "must be an IANA time zone name such as Europe/Berlin or UTC"})
	case err != nil:
		errs = append(errs, api.FieldError{Field: "timezone", Reason: "is not a known IANA time zone name"})
	default:
		c.loc = loc
	}
	return c, errs
}

// wall is a wall-clock reading in the schedule's zone written as a UTC time, where no
// daylight saving exists, so the library's search walks calendar fields without meeting a
// gap or a repeated hour.
func wall(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// Next is the first firing strictly after t, by the one documented rule for daylight
// saving: a wall time that does not exist that day (a gap) fires at the first instant after
// the gap; a wall time that occurs twice fires once, at its first occurrence. The zero time
// when none comes within the library's five-year horizon (31 February).
//
// robfig/cron's own Next walks instants, hour by hour: it skips a time inside a gap
// altogether (02:30 on the day of the spring gap fires the next day) and fires a repeated time
// twice (02:30 CEST and 02:30 CET in autumn), so the search runs
// on wall-clock readings (in UTC, where neither happens) and the reading is then placed on
// the zone's timeline here.
func (c Cron) Next(t time.Time) time.Time {
	w := wall(t, c.loc)
	for range 1000 {
		w = c.spec.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if at := c.instant(w); at.After(t) {
			return at.UTC()
		}
		// The reading's first occurrence is not after t: t is in the second pass of a
		// repeated hour (that reading fired in the first), or in the gap's aftermath.
	}
	return time.Time{}
}

// instant places the wall reading w (in UTC form) on the zone's timeline: its earliest
// occurrence, or the end of the gap it falls in.
func (c Cron) instant(w time.Time) time.Time {
	// An instant whose reading is w lies within a day of w read as UTC (offsets are under
	// 24 h); the zone's offsets on either side give at most two candidates.
	var best time.Time
	for _, probe := range []time.Time{w.Add(-26 * time.Hour), w, w.Add(26 * time.Hour)} {
		_, off := probe.In(c.loc).Zone()
		cand := w.Add(-time.Duration(off) * time.Second)
		if wall(cand, c.loc).Equal(w) && (best.IsZero() || cand.Before(best)) {
			best = cand
		}
	}
	if !best.IsZero() {
		return best
	}
	// A gap: no instant reads w. The first instant after the gap is the start of the zone
	// period that the later offset belongs to; w read with the earlier offset lands in it.
	_, before := w.Add(-26 * time.Hour).In(c.loc).Zone()
	inGap := w.Add(-time.Duration(before) * time.Second)
	start, _ := inGap.In(c.loc).ZoneBounds()
	return start
}
