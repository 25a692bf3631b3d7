package console

import (
	"net/url"
	"testing"
)

// TestOtherLinkLeavesOutTheNamedGroups: the "other" group's link is the chart's whole link
// with one not* item per named group; a named "(none)" group (key "") is left out by the
// flag (the rows with a value), and an unnamed one stays in (no flag).
func TestOtherLinkLeavesOutTheNamedGroups(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		named     []string
		not, flag []string
	}{
		{[]string{"tool_timeout", "", "busy"}, []string{"tool_timeout", "busy"}, []string{"true"}},
		{[]string{"tool_timeout", "busy"}, []string{"tool_timeout", "busy"}, nil},
	} {
		link := otherLink("/ui/runs?endedFrom=x&state=ended", "notErrorCode", "hasError", c.named)
		u, err := url.Parse(link)
		q := u.Query()
		if err != nil || u.Path != "/ui/runs" || q.Get("state") != "ended" || q.Get("endedFrom") != "x" {
			t.Fatalf("%v: %s", c.named, link)
		}
		if got := q["notErrorCode"]; len(got) != len(c.not) || got[0] != c.not[0] || got[1] != c.not[1] {
			t.Errorf("%v: notErrorCode %v, want %v", c.named, got, c.not)
		}
		if got := q["hasError"]; len(got) != len(c.flag) {
			t.Errorf("%v: hasError %v, want %v", c.named, got, c.flag)
		}
	}
}
