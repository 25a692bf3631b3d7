package calls_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestListTenantCalls (issue 29 item 2): GET /v1/calls lists the tenant's calls started in
// a window, newest start first, or finished in one, newest end first, with the filters the
// calls and usage insights count by (target, model or none (hasModel=false), reported usage, the attempt's agent and
// its run's kind); pages continue only their own listing; another tenant sees none.
func TestListTenantCalls(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	_, admin, rt := s.TenantKeys(t)
	l := s.Lease(t, rt)
	start := func(seq int, target, model string) string {
		t.Helper()
		b := fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"kind":"model","target":%q,"requestHash":"r%d"`, l.Token, seq, target, seq)
		if model != "" {
			b += fmt.Sprintf(`,"model":%q`, model)
		}
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/calls", rt, b+"}", nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		return apitest.DecodeAs[api.Call](t, r).CallID.String()
	}
	finish := func(id, usage string) {
		t.Helper()
		apitest.WantStatus(t, s.Do(t, http.MethodPatch, "/v1/attempts/"+l.AttemptID+"/calls/"+id, rt,
			fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded"%s}`, l.Token, usage), nil), http.StatusOK)
	}
	a := start(0, "model://claude", "claude-sonnet-4")
	s.Clock.Advance(time.Second)
	b := start(1, "tool://search", "")
	s.Clock.Advance(time.Second)
	c := start(2, "model://claude", "claude-sonnet-4")
	s.Clock.Advance(time.Second)
	finish(a, `,"usage":{"inputTokens":10},"costMicros":5`)
	finish(b, ``)
	s.Clock.Advance(time.Second)
	finish(c, `,"usage":{"outputTokens":0}`) // reported, but nothing above zero: the usage insight does not count it

	list := func(q string) ([]string, string) {
		t.Helper()
		r := s.Do(t, http.MethodGet, "/v1/calls?"+q, admin, "", nil)
		apitest.WantStatus(t, r, http.StatusOK)
		p := apitest.DecodeAs[api.Page[api.CallItem]](t, r)
		var ids []string
		for _, it := range p.Items {
			if it.ETag == "" {
				t.Fatalf("%s: item %s has no etag", q, it.CallID)
			}
			ids = append(ids, it.CallID.String())
		}
		return ids, p.NextCursor
	}
	at := func(d time.Duration) string { return wireTime(epoch.Add(d)) }
	window := "startedFrom=" + at(0) + "&startedTo=" + at(time.Hour)
	ended := "endedFrom=" + at(0) + "&endedTo=" + at(time.Hour)
	for q, want := range map[string][]string{
		window:                                         {c, b, a},
		"startedFrom=" + at(time.Second):               {c, b},
		"startedTo=" + at(time.Second):                 {a},
		window + "&target=model://claude":              {c, a},
		window + "&model=claude-sonnet-4":              {c, a},
		window + "&agentId=agent-1&kind=review":        {c, b, a},
		window + "&agentId=agent-2":                    nil,
		window + "&kind=triage":                        nil,
		ended:                                          {c, b, a},
		ended + "&reportedUsage=true":                  {a},
		ended + "&reportedUsage=false":                 {c, b, a},
		ended + "&model=claude-sonnet-4":               {c, a},
		window + "&hasModel=false":                     {b},
		window + "&hasModel=true":                      {c, a},
		ended + "&hasModel=true&model=claude-sonnet-4": {c, a},
		// The not* lists (an insight's "other" row): a call without a model is kept.
		window + "&notTarget=model%3A%2F%2Fclaude":                               {b},
		window + "&notTarget=tool%3A%2F%2Fsearch&notTarget=model%3A%2F%2Fclaude": nil,
		window + "&notTarget=x%2Fy":                                              {c, b, a},
		window + "&notModel=claude-sonnet-4":                                     {b},
		window + "&notModel=claude-sonnet-4&hasModel=true":                       nil,
		ended + "&notModel=gpt-5&notModel=claude-sonnet-4&reportedUsage=true":    nil,
		ended + "&notModel=gpt-5&reportedUsage=true":                             {a},
		"endedFrom=" + at(4*time.Second):                                         {c},
		"endedTo=" + at(3*time.Second) + "&target=x/y":                           nil,
	} {
		if got, _ := list(q); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
	// Pages of one walk each listing once, in its own order.
	for _, q := range []string{window, ended} {
		var walked []string
		cur := ""
		for range 5 {
			path := q + "&limit=1"
			if cur != "" {
				path += "&cursor=" + cur
			}
			ids, next := list(path)
			walked = append(walked, ids...)
			if cur = next; cur == "" {
				break
			}
		}
		if whole, _ := list(q); !slices.Equal(walked, whole) || len(walked) != 3 {
			t.Errorf("%s: walked %v, whole %v", q, walked, whole)
		}
	}
	_, byStart := list(window + "&limit=1")
	_, byEnd := list(ended + "&limit=1")
	for _, bad := range []struct{ q, field string }{
		{ended + "&cursor=" + byStart, "cursor"},
		{window + "&cursor=" + byEnd, "cursor"},
		{ended + "&startedFrom=" + at(0), "startedFrom"},
		{"startedFrom=2026-01-02T00:00:00Z&startedTo=2026-01-01T00:00:00Z", "startedTo"},
		{"endedFrom=2026-01-02T00:00:00Z&endedTo=2026-01-01T00:00:00Z", "endedTo"},
		{"reportedUsage=maybe", "reportedUsage"},
		{"target=%20x", "target"},
		{"hasModel=maybe", "hasModel"},
		{"hasModel=false&model=claude-sonnet-4", "hasModel"},
		{"notModel=gpt-5&notModel=%20x", "notModel[1]"},
		{"notTarget=" + strings.Repeat("t&notTarget=", 64) + "t", "notTarget"},
	} {
		apitest.WantProblem(t, s.Do(t, http.MethodGet, "/v1/calls?"+bad.q, admin, "", nil), http.StatusBadRequest, "invalid_request")
	}
	_, otherAdmin, _ := s.TenantKeys(t)
	r := s.Do(t, http.MethodGet, "/v1/calls?"+window, otherAdmin, "", nil)
	apitest.WantStatus(t, r, http.StatusOK)
	if p := apitest.DecodeAs[api.Page[api.CallItem]](t, r); len(p.Items) != 0 {
		t.Fatalf("another tenant lists %d calls", len(p.Items))
	}
}
