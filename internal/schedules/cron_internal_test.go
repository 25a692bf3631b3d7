package schedules

import (
	"testing"
	"time"
)

func mustCron(t *testing.T, expr, tz string) Cron {
	t.Helper()
	c, errs := ParseCron(expr, tz)
	if errs != nil {
		t.Fatalf("parse %q %q: %v", expr, tz, errs)
	}
	return c
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestBerlinDaylightSaving: Europe/Berlin skips 02:00-03:00 on 2026-03-29 (CET -> CEST at
// 01:00 UTC) and repeats 02:00-03:00 on 2026-10-25 (CEST -> CET at 01:00 UTC). A time in the
// gap fires at the first instant after it (03:00 CEST = 01:00 UTC), once however many of
// its times fall in the gap; a repeated time fires once, at its first occurrence (CEST).
func TestBerlinDaylightSaving(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr string
		from       string
		want       []string
	}{
		{"GapFiresAtItsEnd", "30 2 * * *", "2026-03-28T00:00:00Z", []string{
			"2026-03-28T01:30:00Z", // 02:30 CET
			"2026-03-29T01:00:00Z", // 02:30 does not exist: 03:00 CEST
			"2026-03-30T00:30:00Z", // 02:30 CEST
		}},
		{"GapTimesFireOnce", "*/20 2 * * *", "2026-03-29T00:30:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:00, 02:20 and 02:40 are all in the gap
			"2026-03-30T00:00:00Z",
		}},
		{"EveryMinuteAcrossTheGap", "* * * * *", "2026-03-29T00:58:00Z", []string{
			"2026-03-29T00:59:00Z", // 01:59 CET
			"2026-03-29T01:00:00Z", // 03:00 CEST
			"2026-03-29T01:01:00Z",
		}},
		{"RepeatFiresAtFirstOccurrence", "30 2 * * *", "2026-10-24T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST; 02:30 CET (01:30 UTC) does not fire
			"2026-10-26T01:30:00Z", // 02:30 CET
		}},
		{"EveryMinuteInTheRepeatedHour", "*/30 * * * *", "2026-10-24T23:45:00Z", []string{
			"2026-10-25T00:00:00Z", // 02:00 CEST
			"2026-10-25T00:30:00Z", // 02:30 CEST
			"2026-10-25T02:00:00Z", // 03:00 CET: 02:00 and 02:30 CET fired already
		}},
		{"FromInsideTheRepeatedHour", "30 2 * * *", "2026-10-25T01:10:00Z", []string{
			"2026-10-26T01:30:00Z", // 02:30 CET today is a second occurrence
		}},
		{"UTCIsPlain", "0 */6 * * *", "2026-03-29T00:00:00Z", []string{
			"2026-03-29T06:00:00Z", "2026-03-29T12:00:00Z",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tz := "Europe/Berlin"
			if c.name == "UTCIsPlain" {
				tz = "UTC"
			}
			cr := mustCron(t, c.expr, tz)
			at := utc(c.from)
			for i, w := range c.want {
				at = cr.Next(at)
				if !at.Equal(utc(w)) {
					t.Fatalf("firing %d: %s, want %s", i, at.Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestParseCronNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr, tz         string
		badCron, badZone bool
	}{
		{"* * * * *", "UTC", false, false},
		{"0 9 * * MON-FRI", "America/New_York", false, false},
		{"@daily", "Europe/Berlin", false, false},
		{"* * * *", "UTC", true, false},
		{"61 * * * *", "UTC", true, false},
		{"0 0 * * * *", "UTC", true, false},
		{"@every 5m", "UTC", true, false},
		{"* * * * *", "Mars/Olympus", false, true},
		{"* * * * *", "Local", false, true},
		{"nope", "nope", true, true},
	} {
		_, errs := ParseCron(c.expr, c.tz)
		var badCron, badZone bool
		for _, e := range errs {
			badCron = badCron || e.Field == "cron"
			badZone = badZone || e.Field == "timezone"
		}
		if badCron != c.badCron || badZone != c.badZone {
			t.Errorf("%q %q: %v", c.expr, c.tz, errs)
		}
	}
}
