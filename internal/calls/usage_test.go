package calls_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestUsageIsRecordedRepeatedAndSummed: a model call names its model, provider and operation
// when it starts and reports usage, response model, finish reasons and cost when it ends;
// an exact repeat of the finish answers as the first, another usage is 409; bad counts are
// 400 naming the field and change nothing; the attempt and the run (over both of its
// attempts) answer the exact sums, and another tenant sees neither.
func TestUsageIsRecordedRepeatedAndSummed(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	_, admin, rt := s.TenantKeys(t)
	l := s.Lease(t, rt)
	calls := "/v1/attempts/" + l.AttemptID + "/calls"

	start := func(token int64, seq int) string {
		t.Helper()
		b := fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"kind":"model","target":"model://claude","requestHash":"r%d",`+
			`"model":"claude-sonnet-4","provider":"anthropic","operation":"chat"}`, token, seq, seq)
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/calls", rt, b, nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		c := apitest.DecodeAs[api.Call](t, r)
		if c.Model == nil || *c.Model != "claude-sonnet-4" || *c.Provider != "anthropic" || *c.Operation != "chat" {
			t.Fatalf("started call %+v, want its model, provider and operation", c)
		}
		return r.Header.Get("Location")
	}
	finish := func(token int64, in, out, cost int) string {
		return fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded","usage":{"inputTokens":%d,"outputTokens":%d,`+
			`"cacheReadInputTokens":7,"reasoningOutputTokens":3},"responseModel":"claude-sonnet-4-20260101",`+
			`"finishReasons":["end_turn"],"costMicros":%d}`, token, in, out, cost)
	}

	first := start(l.Token, 0)
	r := s.Do(t, http.MethodPatch, first, rt, finish(l.Token, 1200, 340, 5100), nil)
	apitest.WantStatus(t, r, http.StatusOK)
	c := apitest.DecodeAs[api.Call](t, r)
	if c.Usage == nil || *c.Usage.InputTokens != 1200 || *c.Usage.OutputTokens != 340 || *c.Usage.CacheReadInputTokens != 7 ||
		c.Usage.CacheCreationInputTokens != nil || *c.CostMicros != 5100 || *c.ResponseModel != "claude-sonnet-4-20260101" ||
		len(c.FinishReasons) != 1 || c.FinishReasons[0] != "end_turn" {
		t.Fatalf("finished call %+v, usage %+v", c, c.Usage)
	}
	apitest.WantStatus(t, s.Do(t, http.MethodPatch, first, rt, finish(l.Token, 1200, 340, 5100), nil), http.StatusOK)
	apitest.WantProblem(t, s.Do(t, http.MethodPatch, first, rt, finish(l.Token, 1200, 341, 5100), nil),
		http.StatusConflict, "illegal_transition")

	second := start(l.Token, 1)
	for _, bad := range []struct{ body, field string }{
		{fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded","usage":{"inputTokens":-1}}`, l.Token), "usage.inputTokens"},
		{fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded","costMicros":-5}`, l.Token), "costMicros"},
		{fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded","finishReasons":["a","b","c","d","e","f","g","h","i"]}`, l.Token), "finishReasons"},
	} {
		apitest.WantFields(t, s.Do(t, http.MethodPatch, second, rt, bad.body, nil), bad.field)
	}
	if got := apitest.DecodeAs[api.Call](t, s.Do(t, http.MethodGet, second, rt, "", nil)); got.Status != api.CallStarted {
		t.Fatalf("after refused finishes the call is %s, want started", got.Status)
	}
	apitest.WantStatus(t, s.Do(t, http.MethodPatch, second, rt, finish(l.Token, 800, 60, 2000), nil), http.StatusOK)
	// A tool call reports nothing: counted in calls, not in reported.
	tool := s.Do(t, http.MethodPost, calls, rt, recordBody(l.Token, 2, "t2"), nil)
	apitest.WantStatus(t, tool, http.StatusCreated)

	want := api.UsageTotals{Calls: 3, Reported: 2, InputTokens: 2000, OutputTokens: 400, CacheReadInputTokens: 14,
		ReasoningOutputTokens: 6, CostMicros: 7100}
	if got := apitest.DecodeAs[api.UsageTotals](t, s.Do(t, http.MethodGet, "/v1/attempts/"+l.AttemptID+"/usage", admin, "", nil)); got != want {
		t.Fatalf("attempt usage %+v, want %+v", got, want)
	}

	// A second attempt of the same run: released, claimed again, one more call.
	apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/release", rt,
		fmt.Sprintf(`{"fencingToken":%d,"charge":false,"retryAfterSeconds":0}`, l.Token), nil), http.StatusOK)
	l2 := s.ClaimLease(t, rt)
	if l2.RunID != l.RunID {
		t.Fatalf("claimed run %s, want %s again", l2.RunID, l.RunID)
	}
	l.AttemptID = l2.AttemptID
	third := start(l2.Token, 0)
	apitest.WantStatus(t, s.Do(t, http.MethodPatch, third, rt, finish(l2.Token, 10, 5, 900), nil), http.StatusOK)
	want = api.UsageTotals{Calls: 4, Reported: 3, InputTokens: 2010, OutputTokens: 405, CacheReadInputTokens: 21,
		ReasoningOutputTokens: 9, CostMicros: 8000}
	if got := apitest.DecodeAs[api.UsageTotals](t, s.Do(t, http.MethodGet, "/v1/runs/"+l.RunID+"/usage", rt, "", nil)); got != want {
		t.Fatalf("run usage %+v, want %+v", got, want)
	}

	// Insights sum the same calls, exactly, once the roll-ups have caught up.
	if err := s.App.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"model", "project"} {
		r := s.Do(t, http.MethodGet, "/v1/insights/usage?bucket=1d&groupBy="+by+"&from="+wireTime(epoch.Truncate(24*time.Hour))+"&to="+wireTime(epoch.Truncate(24*time.Hour).Add(24*time.Hour)),
			admin, "", nil)
		apitest.WantStatus(t, r, http.StatusOK)
		ins := apitest.DecodeAs[api.InsightSeries](t, r)
		if len(ins.Groups) != 1 || (by == "model" && ins.Groups[0].Key != "claude-sonnet-4") || (by == "project" && ins.Groups[0].Key != "p1") {
			t.Fatalf("usage by %s: groups %+v", by, ins.Groups)
		}
		got := map[string]int64{}
		for _, se := range ins.Groups[0].Series {
			got[se.Name] = se.Total
		}
		wantSums := map[string]int64{"calls": want.Reported, "inputTokens": want.InputTokens, "outputTokens": want.OutputTokens,
			"cacheReadInputTokens": want.CacheReadInputTokens, "cacheCreationInputTokens": 0,
			"reasoningOutputTokens": want.ReasoningOutputTokens, "costMicros": want.CostMicros}
		for k, v := range wantSums {
			if got[k] != v {
				t.Errorf("usage by %s: %s = %d, want %d (the calls' sum)", by, k, got[k], v)
			}
		}
	}

	_, otherAdmin, _ := s.TenantKeys(t)
	apitest.WantProblem(t, s.Do(t, http.MethodGet, "/v1/runs/"+l.RunID+"/usage", otherAdmin, "", nil), http.StatusNotFound, "not_found")
	apitest.WantProblem(t, s.Do(t, http.MethodGet, "/v1/attempts/"+l2.AttemptID+"/usage", otherAdmin, "", nil), http.StatusNotFound, "not_found")
}

// TestDailyCostBudgetHoldsClaimsAtTheCent: once the cost the project's calls recorded since
// 00:00 UTC reaches its budget, claims of its runs answer 204 with Retry-After, the running
// holder sees budgetHeld on its heartbeat, the project shows the day's cost; a higher budget
// or the next day releases the hold; null removes the budget and an absent member keeps it.
func TestDailyCostBudgetHoldsClaimsAtTheCent(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	_, admin, rt := s.TenantKeys(t)
	putBudget := func(body string) api.Project {
		t.Helper()
		cur := s.Do(t, http.MethodGet, "/v1/projects/p1", admin, "", nil)
		apitest.WantStatus(t, cur, http.StatusOK)
		r := s.Do(t, http.MethodPut, "/v1/projects/p1", admin, body, map[string]string{"If-Match": cur.Header.Get("ETag")})
		apitest.WantStatus(t, r, http.StatusOK)
		return apitest.DecodeAs[api.Project](t, r)
	}
	if p := putBudget(`{"dailyCostBudgetMicros":10000}`); p.DailyCostBudgetMicros == nil || *p.DailyCostBudgetMicros != 10000 || p.CostHeld {
		t.Fatalf("project after setting the budget: %+v", p)
	}
	enqueue := func(subject string) {
		t.Helper()
		b := fmt.Sprintf(`{"subject":%q,"kind":"review","projectId":"p1","agentId":"agent-1","stepId":"%s","snapshotId":"%s"}`,
			subject, "0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e51", "0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e52")
		apitest.WantStatus(t, s.Do(t, http.MethodPost, "/v1/runs", rt, b, nil), http.StatusCreated)
	}
	spend := func(l apitest.Lease, seq, cost int) {
		t.Helper()
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/calls", rt, fmt.Sprintf(
			`{"fencingToken":%d,"sequence":%d,"kind":"model","target":"model://m","requestHash":"h%d"}`, l.Token, seq, seq), nil)
		apitest.WantStatus(t, r, http.StatusCreated)
		apitest.WantStatus(t, s.Do(t, http.MethodPatch, r.Header.Get("Location"), rt,
			fmt.Sprintf(`{"fencingToken":%d,"status":"succeeded","costMicros":%d}`, l.Token, cost), nil), http.StatusOK)
	}
	heldOnHeartbeat := func(l apitest.Lease) bool {
		t.Helper()
		r := s.Do(t, http.MethodPost, "/v1/attempts/"+l.AttemptID+"/heartbeat", rt, fmt.Sprintf(`{"fencingToken":%d}`, l.Token), nil)
		apitest.WantStatus(t, r, http.StatusOK)
		return apitest.DecodeAs[api.Heartbeat](t, r).BudgetHeld
	}
	claim := func() apitest.Response {
		t.Helper()
		return s.Do(t, http.MethodPost, "/v1/runs/claim", rt, s.ClaimBody(t, rt), nil)
	}

	a := s.Lease(t, rt) // subject of its own in p1
	spend(a, 0, 9999)
	if heldOnHeartbeat(a) {
		t.Fatal("budgetHeld at 9,999 of 10,000")
	}
	enqueue("budget-b")
	apitest.WantStatus(t, claim(), http.StatusOK) // one micro below the budget: granted
	spend(a, 1, 1)
	if !heldOnHeartbeat(a) {
		t.Fatal("no budgetHeld at 10,000 of 10,000")
	}
	enqueue("budget-c")
	held := claim()
	apitest.WantStatus(t, held, http.StatusNoContent)
	if held.Header.Get("Retry-After") == "" {
		t.Fatal("a cost-held claim has no Retry-After")
	}
	p := apitest.DecodeAs[api.Project](t, s.Do(t, http.MethodGet, "/v1/projects/p1", admin, "", nil))
	if p.CostTodayMicros != 10000 || !p.CostHeld {
		t.Fatalf("project at the budget: %+v", p)
	}

	// A higher budget releases the hold at once; an absent member keeps it.
	if p := putBudget(`{"dailyCostBudgetMicros":20000}`); p.CostHeld {
		t.Fatalf("project with a higher budget: %+v", p)
	}
	apitest.WantStatus(t, claim(), http.StatusOK)
	if p := putBudget(`{"retentionDays":30}`); p.DailyCostBudgetMicros == nil || *p.DailyCostBudgetMicros != 20000 {
		t.Fatalf("an update without the member changed the budget: %+v", p)
	}

	// Back at the budget, then the next UTC day: the day's counter starts again.
	putBudget(`{"dailyCostBudgetMicros":10000}`)
	enqueue("budget-d")
	apitest.WantStatus(t, claim(), http.StatusNoContent)
	s.Clock.Advance(24 * time.Hour)
	if p := apitest.DecodeAs[api.Project](t, s.Do(t, http.MethodGet, "/v1/projects/p1", admin, "", nil)); p.CostTodayMicros != 0 || p.CostHeld {
		t.Fatalf("project the next day: %+v", p)
	}
	apitest.WantStatus(t, claim(), http.StatusOK)

	if p := putBudget(`{"dailyCostBudgetMicros":null}`); p.DailyCostBudgetMicros != nil {
		t.Fatalf("null did not remove the budget: %+v", p)
	}
	apitest.WantFields(t, s.Do(t, http.MethodPut, "/v1/projects/p1", admin, `{"dailyCostBudgetMicros":-1}`,
		map[string]string{"If-Match": "*"}), "dailyCostBudgetMicros")
}
