package runs_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// TestHTTPForkFromACheckpoint (issue 29 item 3): a fork is a new run whose resume point is
// the checkpoint it names until it writes its own; the source and its chain are left as
// they are; an idempotency key names one fork; a checkpoint of another run, or another
// tenant's run, is refused.
func TestHTTPForkFromACheckpoint(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	var src map[string]any
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("fork:1", `,"tags":["t1"],"input":{"n":1}`), &src); code != 201 {
		t.Fatal(code)
	}
	srcID := src["runId"].(string)
	attempt, _ := e.claimAs("r1")
	checkpoint := func(attempt string, token, seq int) string {
		t.Helper()
		var cp map[string]any
		body := fmt.Sprintf(`{"fencingToken":%d,"sequence":%d,"phase":"acting","adapterStateRef":"s3://state/%d","adapterVersion":"1.0","hash":"h%d"}`,
			token, seq, seq, seq)
		if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/checkpoints", e.runtime, body, &cp); code != 201 {
			t.Fatalf("checkpoint %d: %d %v", seq, code, cp)
		}
		return cp["checkpointId"].(string)
	}
	cp0, cp1 := checkpoint(attempt, 1, 0), checkpoint(attempt, 1, 1)
	if code, _ := e.do("POST", "/v1/attempts/"+attempt+"/complete", e.runtime, `{"fencingToken":1,"state":"failed"}`, nil); code != 200 {
		t.Fatal(code)
	}
	last := func(run string) string {
		t.Helper()
		var cp map[string]any
		if code, _ := e.do("GET", "/v1/runs/"+run+"/checkpoints/last", e.admin, ``, &cp); code != 200 {
			t.Fatalf("last checkpoint of %s: %d", run, code)
		}
		return cp["checkpointId"].(string)
	}
	body := fmt.Sprintf(`{"checkpointId":%q,"idempotencyKey":"fork-1"}`, cp0)
	var fork map[string]any
	code, h := e.do("POST", "/v1/runs/"+srcID+"/fork", e.admin, body, &fork)
	if code != 201 || h.Get("Location") == "" || fork["forkedFromCheckpointId"] != cp0 || fork["runId"] == srcID ||
		fork["state"] != "queued" || fork["continuedFromRunId"] != nil || fmt.Sprint(fork["tags"]) != "[t1]" ||
		fmt.Sprint(fork["input"]) != "map[n:1]" || fork["epoch"] != float64(0) {
		t.Fatalf("fork: %d %v", code, fork)
	}
	forkID := fork["runId"].(string)
	if got := last(forkID); got != cp0 {
		t.Fatalf("the fork resumes from %s, want %s", got, cp0)
	}
	if got := last(srcID); got != cp1 {
		t.Fatalf("the source's last checkpoint became %s, want %s", got, cp1)
	}
	var again map[string]any
	if code, _ := e.do("POST", "/v1/runs/"+srcID+"/fork", e.admin, body, &again); code != 200 || again["runId"] != forkID {
		t.Fatalf("exact repeat of the fork: %d %v", code, again)
	}
	var p problem
	if code, _ := e.do("POST", "/v1/runs/"+srcID+"/fork", e.admin, fmt.Sprintf(`{"checkpointId":%q,"idempotencyKey":"fork-1"}`, cp1), &p); code != 409 ||
		p.Code != "idempotency_key_reused" {
		t.Fatalf("the key for another fork: %d %+v", code, p)
	}
	var other map[string]any
	if code, _ := e.do("POST", "/v1/runs", e.runtime, enqueueBody("fork:2", ""), &other); code != 201 {
		t.Fatal(code)
	}
	if code, _ := e.do("POST", "/v1/runs/"+other["runId"].(string)+"/fork", e.admin, fmt.Sprintf(`{"checkpointId":%q}`, cp0), &p); code != 400 ||
		p.Errors[0].Field != "checkpointId" {
		t.Fatalf("a checkpoint of another run: %d %+v", code, p)
	}
	if code, _ := e.do("POST", "/v1/runs/"+uuid.NewString()+"/fork", e.admin, fmt.Sprintf(`{"checkpointId":%q}`, cp0), &p); code != 404 {
		t.Fatalf("no such run: %d", code)
	}
	if code, _ := e.do("POST", "/v1/runs/"+srcID+"/fork", e.other, fmt.Sprintf(`{"checkpointId":%q}`, cp0), &p); code != 404 {
		t.Fatalf("another tenant's run: %d", code)
	}
	// The fork's holder writes its own checkpoint: that is its resume point from then on.
	forkAttempt, claimed := e.claimAs("r1")
	if claimed != forkID {
		t.Fatalf("claimed %s, want the fork %s", claimed, forkID)
	}
	own := checkpoint(forkAttempt, 1, 0)
	if got := last(forkID); got != own {
		t.Fatalf("after its own checkpoint the fork resumes from %s, want %s", got, own)
	}
}
