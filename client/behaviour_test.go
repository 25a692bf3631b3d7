package client

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// TestWorkerBehaviourTable: the Worker's constants, its refusal classes and its lease-loss
// codes are ../api/worker.json's, the table the TypeScript and Python SDKs check too.
func TestWorkerBehaviourTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../api/worker.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Heartbeat    struct{ LeaseDivisor, MinMs int64 }
		Claim        struct{ WaitSeconds, LongPolls, IdleWaitMs int64 }
		ClaimBackoff struct {
			FailedBaseMs, FailedMaxMs, RefusedBaseMs, RefusedMaxMs, RefusalLogEveryMs int64
			HeldJitterDivisor, HeldJitterMaxMs                                        int64
		}
		Shutdown       struct{ GraceMs, SettleTimeoutMinMs int64 }
		RefusalClasses struct {
			Fatal   []string
			Refused struct {
				StatusFrom, StatusTo int
				Except               []int
			}
			LeaseLost, HeartbeatLost []string
		}
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"heartbeat.leaseDivisor", int64(heartbeatDivisor), table.Heartbeat.LeaseDivisor},
		{"heartbeat.minMs", heartbeatMin, ms(table.Heartbeat.MinMs)},
		{"claim.waitSeconds", int64(defaultWaitSeconds), table.Claim.WaitSeconds},
		{"claim.longPolls", int64(defaultLongPolls), table.Claim.LongPolls},
		{"claim.idleWaitMs", defaultIdleWait, ms(table.Claim.IdleWaitMs)},
		{"claimBackoff.failedBaseMs", claimBackoffBase, ms(table.ClaimBackoff.FailedBaseMs)},
		{"claimBackoff.failedMaxMs", claimBackoffMax, ms(table.ClaimBackoff.FailedMaxMs)},
		{"claimBackoff.refusedBaseMs", RefusalBackoff, ms(table.ClaimBackoff.RefusedBaseMs)},
		{"claimBackoff.refusedMaxMs", RefusalBackoffMax, ms(table.ClaimBackoff.RefusedMaxMs)},
		{"claimBackoff.refusalLogEveryMs", RefusalLogEvery, ms(table.ClaimBackoff.RefusalLogEveryMs)},
		{"claimBackoff.heldJitterDivisor", time.Duration(heldJitterDivisor), time.Duration(table.ClaimBackoff.HeldJitterDivisor)},
		{"claimBackoff.heldJitterMaxMs", heldJitterMax, ms(table.ClaimBackoff.HeldJitterMaxMs)},
		{"shutdown.graceMs", defaultShutdownGrace, ms(table.Shutdown.GraceMs)},
		{"shutdown.settleTimeoutMinMs", settleTimeoutMin, ms(table.Shutdown.SettleTimeoutMinMs)},
	} {
		if c.got != c.want {
			t.Errorf("%s: the Go Worker has %v, api/worker.json %v", c.name, c.got, c.want)
		}
	}
	codes := func(cs []api.ProblemCode) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = string(c)
		}
		return out
	}
	if got := codes(leaseLossCodes); !slices.Equal(got, table.RefusalClasses.LeaseLost) {
		t.Errorf("leaseLost: the Go Lease has %v, api/worker.json %v", got, table.RefusalClasses.LeaseLost)
	}
	if got := codes(heartbeatLossCodes); !slices.Equal(got, table.RefusalClasses.HeartbeatLost) {
		t.Errorf("heartbeatLost: the Go Lease has %v, api/worker.json %v", got, table.RefusalClasses.HeartbeatLost)
	}
	// The refusal classes, decided by the Worker's own predicates for every 4xx and 5xx.
	for status := 400; status < 600; status++ {
		p := &Problem{Problem: api.Problem{Status: status, Code: api.CodeInvalidRequest}}
		r := table.RefusalClasses.Refused
		want := status >= r.StatusFrom && status <= r.StatusTo && !slices.Contains(r.Except, status)
		if got := refusedClaim(p); got != want {
			t.Errorf("refusedClaim(%d) = %v, api/worker.json says %v", status, got, want)
		}
	}
	for _, code := range []api.ProblemCode{api.CodeUnauthorized, api.CodeForbidden, api.CodeInvalidRequest, api.CodeNotFound, api.CodeStaleLease} {
		var err error = &Problem{Problem: api.Problem{Status: code.Status(), Code: code}}
		if got, want := fatalClaim(err), slices.Contains(table.RefusalClasses.Fatal, string(code)); got != want {
			t.Errorf("fatalClaim(%s) = %v, api/worker.json says %v", code, got, want)
		}
	}
}
