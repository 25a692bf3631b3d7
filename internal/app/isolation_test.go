package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/app"
)

// isoExpect is what one key of tenant B must get from one probe: a problem (status and
// code), or a status checked further by check.
type isoExpect struct {
	status int
	code   string
	// check, when set, judges the answer instead of status and code (B-scoped answers).
	check func(t *testing.T, r response)
}

// isoProbe is one request sent to a route with tenant A's ids in its path.
type isoProbe struct {
	name    string
	query   string
	body    string
	ifMatch string
	// params overrides path values of the default map for this probe.
	params map[string]string
	admin  isoExpect
	rt     isoExpect
}

var (
	isoNotFound  = isoExpect{status: http.StatusNotFound, code: "not_found"}
	isoForbidden = isoExpect{status: http.StatusForbidden, code: "forbidden"}
)

// isoUUIDParams are the path parameters that are UUIDs (a missing one is a fresh UUID).
var isoUUIDParams = map[string]bool{
	"runId": true, "attemptId": true, "decisionId": true, "delegationId": true, "callId": true, "checkpointId": true, "deliveryId": true,
	"operationId": true,
}

// fillPath replaces the ":name" segments of an Echo path with values.
func fillPath(path string, values map[string]string) (string, error) {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, ":") {
			continue
		}
		v, ok := values[s[1:]]
		if !ok {
			return "", fmt.Errorf("no value for path parameter %s", s)
		}
		segs[i] = v
	}
	return strings.Join(segs, "/"), nil
}

// isPublic reports whether op is one of the four routes that need no key.
func isPublic(op string) bool {
	switch op {
	case "GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json":
		return true
	}
	return false
}

type isoSnap struct {
	status int
	etag   string
	body   string
}

// TestTenantIsolationMatrix proves DESIGN.md section 6 for every registered non-public
// route: tenant B's admin and runtime keys get 404 for tenant A's ids (403 first when the
// role is wrong), lists show B none of A's rows, the routes whose path ids are B's own by
// design answer in B's scope, and nothing of A changes.
func TestTenantIsolationMatrix(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	_, adminA, rtA := s.tenantKeys(t)
	_, adminB, rtB := s.tenantKeys(t)

	must := func(t *testing.T, r response, status int) response {
		t.Helper()
		wantStatus(t, r, status)
		return r
	}
	type obj = map[string]any
	str := func(t *testing.T, r response, path ...string) string {
		t.Helper()
		var v any = decode[obj](t, r)
		for _, p := range path {
			m, ok := v.(obj)
			if !ok {
				t.Fatalf("no %v in %s", path, r.body)
			}
			v = m[p]
		}
		switch x := v.(type) {
		case string:
			return x
		case float64:
			return fmt.Sprint(int64(x))
		}
		t.Fatalf("no %v in %s", path, r.body)
		return ""
	}
	enqueue := func(subject, kind, project, extra string) string {
		return fmt.Sprintf(`{"subject":%q,"kind":%q,"projectId":%q,"agentId":"iso-agent","stepId":%q,"snapshotId":%q%s}`,
			subject, kind, project, uuid.NewString(), uuid.NewString(), extra)
	}

	// 1. Tenant A builds one of everything through the API.
	const (
		projectA = "iso-proj-a"
		releaseA = "iso-rel-a"
		adapterA = "1.0"
		agentA   = "iso-agent-a"
		taskA    = "iso-task-a"
		holderA  = "holder-a"
	)
	r := must(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/" + projectA, key: adminA, body: `{"retentionDays": 17}`}), http.StatusCreated)
	projectETag := r.header.Get("ETag")

	refs, err := json.Marshal([]string{"x://a"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(refs)
	releaseBody := func(state string) string {
		return fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":%q}`, hex.EncodeToString(sum[:]), refs, state)
	}
	releasePath := "/v1/releases/" + releaseA + "/adapters/" + adapterA
	r = must(t, s.do(t, req{method: http.MethodPut, path: releasePath, key: rtA, body: releaseBody("active")}), http.StatusCreated)
	releaseETag := r.header.Get("ETag")
	claimBody := func(holder, release, kind string) string {
		return fmt.Sprintf(`{"holderId":%q,"releaseId":%q,"adapterVersion":%q,"modelProfileId":"m","leaseSeconds":3600,"kinds":[%q]}`,
			holder, release, adapterA, kind)
	}

	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtA, body: enqueue("iso-s1", "iso", projectA, "")}), http.StatusCreated)
	run1 := str(t, r, "runId")
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: rtA, body: claimBody("holder-1", releaseA, "iso")}), http.StatusOK)
	if got := str(t, r, "run", "runId"); got != run1 {
		t.Fatalf("claimed run %s, want %s", got, run1)
	}
	att1, token := str(t, r, "attempt", "attemptId"), str(t, r, "lease", "fencingToken")

	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/attempts/" + att1 + "/checkpoints", key: rtA,
		body: fmt.Sprintf(`{"fencingToken":%s,"sequence":0,"phase":"planning","adapterStateRef":"x://s0","adapterVersion":%q,"hash":"h0"}`, token, adapterA)}), http.StatusCreated)
	checkpoint := str(t, r, "checkpointId")
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/attempts/" + att1 + "/calls", key: rtA,
		body: fmt.Sprintf(`{"fencingToken":%s,"sequence":0,"kind":"tool","target":"t","requestHash":"rh0"}`, token)}), http.StatusCreated)
	call, callETag := str(t, r, "callId"), r.header.Get("ETag")
	// A's webhook, subscribed to decision.requested so the request below writes A a delivery.
	// An address literal: nothing resolves it, and no dispatcher runs here to dial it.
	must(t, s.do(t, req{method: http.MethodPut, path: "/v1/webhooks/iso-hook", key: adminA,
		body: `{"url":"https://203.0.113.9/hook","events":["decision.requested"]}`}), http.StatusCreated)
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/attempts/" + att1 + "/decisions", key: rtA,
		body: fmt.Sprintf(`{"fencingToken":%s,"kind":"approval","options":{"a":1},"expiresInSeconds":86400}`, token)}), http.StatusCreated)
	decision, decisionETag := str(t, r, "decisionId"), r.header.Get("ETag")
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/attempts/" + att1 + "/delegations", key: rtA,
		body: fmt.Sprintf(`{"fencingToken":%s,"purpose":"p","child":%s}`, token, enqueue("iso-s-child", "iso-child", projectA, ""))}), http.StatusCreated)
	delegation, childRun := str(t, r, "delegationId"), str(t, r, "childRunId")
	r = must(t, s.do(t, req{method: http.MethodGet, path: "/v1/webhook-deliveries", key: adminA}), http.StatusOK)
	var deliveries struct {
		Items []struct {
			DeliveryID string `json:"deliveryId"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.body, &deliveries); err != nil || len(deliveries.Items) != 1 {
		t.Fatalf("A's deliveries: %s", r.body)
	}
	delivery := deliveries.Items[0].DeliveryID
	lockPath := "/v1/locks/agents/" + agentA + "/tasks/" + taskA
	r = must(t, s.do(t, req{method: http.MethodPut, path: lockPath, key: rtA, body: fmt.Sprintf(`{"holderId":%q,"ttlSeconds":3600}`, holderA)}), http.StatusOK)
	lockUntil := str(t, r, "heldUntil")

	// A schedule (its firings are runs of A's too).
	r = must(t, s.do(t, req{method: http.MethodPut, path: "/v1/schedules/iso-sched", key: adminA,
		body: `{"cron":"@hourly","run":` + enqueue("iso-sched", "iso", projectA, "") + `}`}), http.StatusCreated)
	scheduleETag := r.header.Get("ETag")

	// An ended run, for continue.
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtA, body: enqueue("iso-s2", "iso-end", projectA, "")}), http.StatusCreated)
	run2 := str(t, r, "runId")
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: rtA, body: claimBody("holder-2", releaseA, "iso-end")}), http.StatusOK)
	att2, token2 := str(t, r, "attempt", "attemptId"), str(t, r, "lease", "fencingToken")
	must(t, s.do(t, req{method: http.MethodPost, path: "/v1/attempts/" + att2 + "/complete", key: rtA,
		body: fmt.Sprintf(`{"fencingToken":%s,"state":"succeeded"}`, token2)}), http.StatusOK)
	if st := str(t, s.do(t, req{method: http.MethodGet, path: "/v1/runs/" + run2, key: adminA}), "state"); st != "ended" {
		t.Fatalf("run2 is %s, want ended", st)
	}

	// A bulk operation of A's (over the ended run: it changes nothing the probes use).
	r = must(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/bulk", key: adminA,
		body: `{"action":"cancel","runIds":["` + run2 + `"]}`}), http.StatusAccepted)
	operation := str(t, r, "operationId")
	// Worked to its end now, so B's probes (whose runner pass sees every tenant) change nothing of A's.
	if _, err := s.app.Operations.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A's history is in the insights roll-ups too, so B's insights are checked against it.
	if err := s.app.CatchUpFeed(context.Background()); err != nil {
		t.Fatal(err)
	}

	values := map[string]string{
		"operationId": operation, "runId": run1, "attemptId": att1, "projectId": projectA, "decisionId": decision, "delegationId": delegation,
		"releaseId": releaseA, "adapterVersion": adapterA, "callId": call, "checkpointId": checkpoint,
		"agentId": agentA, "taskId": taskA, "scheduleId": "iso-sched", "webhookName": "iso-hook", "deliveryId": delivery,
	}
	// aIDs are strings that name A's rows and may appear in no answer to B.
	aIDs := []string{run1, run2, childRun, att1, att2, checkpoint, call, decision, delegation, releaseA, delivery, operation}

	var ops []string
	for _, op := range s.app.Server.Operations() {
		if !isPublic(op) {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		t.Fatal("no operations registered")
	}

	// 2. Snapshot A's state: every GET route with A's ids, and A's other runs.
	snapshot := func() map[string]isoSnap {
		t.Helper()
		paths := []string{"/v1/runs/" + run2, "/v1/runs/" + childRun}
		for _, op := range ops {
			method, path, _ := strings.Cut(op, " ")
			if method != http.MethodGet {
				continue
			}
			p, err := fillPath(path, values)
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			paths = append(paths, p)
		}
		out := map[string]isoSnap{}
		for _, p := range paths {
			r := s.do(t, req{method: http.MethodGet, path: p, key: adminA})
			out[p] = isoSnap{status: r.status, etag: r.header.Get("ETag"), body: string(r.body)}
		}
		return out
	}
	before := snapshot()
	for p, sn := range before {
		if sn.status != http.StatusOK {
			t.Fatalf("tenant A reads its own %s: status %d, body %s", p, sn.status, sn.body)
		}
		var page struct {
			Items *[]json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal([]byte(sn.body), &page); err == nil && page.Items != nil && len(*page.Items) == 0 {
			t.Fatalf("tenant A's list %s is empty, so B's empty list would prove nothing", p)
		}
	}

	// noARows checks a list answered to B holds none of A's rows.
	noARows := func(t *testing.T, r response) {
		t.Helper()
		wantStatus(t, r, http.StatusOK)
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || page.Items == nil {
			t.Fatalf("not a page: %v; %s", err, r.body)
		}
		for _, id := range aIDs {
			if strings.Contains(string(r.body), id) {
				t.Fatalf("tenant B's list names A's %s: %s", id, r.body)
			}
		}
		for _, sn := range before {
			var aPage struct {
				Items []json.RawMessage `json:"items"`
			}
			if json.Unmarshal([]byte(sn.body), &aPage) != nil {
				continue
			}
			for _, bi := range page.Items {
				for _, ai := range aPage.Items {
					if jsonEqual(bi, ai) {
						t.Fatalf("tenant B's list holds A's row %s", ai)
					}
				}
			}
		}
	}
	list := isoExpect{check: noARows}
	// An insight of B's names nothing of A's: no id, and no group of A's projects, agents,
	// releases or kinds.
	insight := isoExpect{check: func(t *testing.T, r response) {
		t.Helper()
		wantStatus(t, r, http.StatusOK)
		for _, id := range append(slices.Clone(aIDs), projectA, releaseA) {
			if strings.Contains(string(r.body), `"`+id+`"`) {
				t.Fatalf("tenant B's insight names A's %s: %s", id, r.body)
			}
		}
	}}

	// 4. Cross-tenant references in bodies answer as missing ones do (before the matrix,
	// while B has no project of A's id).
	t.Run("BodyReferences", func(t *testing.T) {
		must(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/iso-proj-b", key: adminB}), http.StatusCreated)
		// A's project.
		other := wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtB, body: enqueue("b-1", "k", projectA, "")}),
			http.StatusUnprocessableEntity, "unknown_project")
		missing := wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtB, body: enqueue("b-1", "k", "iso-proj-none", "")}),
			http.StatusUnprocessableEntity, "unknown_project")
		sameDetail(t, other, missing, projectA, "iso-proj-none")
		// A's run as parent.
		other = wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtB,
			body: enqueue("b-2", "k", "iso-proj-b", fmt.Sprintf(`,"parentRunId":%q`, run1))}), http.StatusBadRequest, "invalid_request")
		none := uuid.NewString()
		missing = wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: rtB,
			body: enqueue("b-2", "k", "iso-proj-b", fmt.Sprintf(`,"parentRunId":%q`, none))}), http.StatusBadRequest, "invalid_request")
		if len(other.Errors) != 1 || other.Errors[0].Field != "parentRunId" {
			t.Fatalf("A's run as parent: errors %+v, want parentRunId", other.Errors)
		}
		sameDetail(t, other, missing, run1, none)
		if fmt.Sprint(other.Errors) != fmt.Sprint(missing.Errors) {
			t.Fatalf("A's run as parent answers %+v, a missing one %+v", other.Errors, missing.Errors)
		}
		// A's release in a claim.
		other = wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: rtB, body: claimBody("hb", releaseA, "k")}),
			http.StatusUnprocessableEntity, "release_not_active")
		missing = wantProblem(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs/claim", key: rtB, body: claimBody("hb", "iso-rel-none", "k")}),
			http.StatusUnprocessableEntity, "release_not_active")
		sameDetail(t, other, missing, releaseA, "iso-rel-none")
		// A delegation whose child names A's project is refused by the fence first (404),
		// covered by the matrix below.
	})

	// B's batch naming A's project: unknown_project, or B's own run when B has a project of
	// that id (the projects probe may have made it first).
	ownBatch := func(t *testing.T, r response) {
		if r.status != http.StatusOK {
			wantProblem(t, r, http.StatusUnprocessableEntity, "unknown_project")
			return
		}
		b := decode[api.BatchEnqueueResponse](t, r)
		if len(b.Items) != 1 {
			t.Fatalf("B's batch answered %s", r.body)
		}
		wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/runs/" + b.Items[0].Run.RunID.String(), key: adminA}), http.StatusNotFound, "not_found")
	}

	// 3. The matrix: every route, with B's admin and runtime keys.
	fence := func(extra string) string { return fmt.Sprintf(`{"fencingToken":%s%s}`, token, extra) }
	table := map[string][]isoProbe{
		"PUT /v1/projects/:projectId": {
			{name: "IfMatchOfA", body: `{"retentionDays": 3}`, ifMatch: projectETag,
				admin: isoExpect{status: http.StatusPreconditionFailed, code: "precondition_failed"}, rt: isoForbidden},
			// Without If-Match it is a create of B's own project of the same id.
			{name: "Create", body: `{"retentionDays": 3}`, rt: isoForbidden, admin: isoExpect{check: func(t *testing.T, r response) {
				wantStatus(t, r, http.StatusCreated)
				if p := decode[projectBody](t, r); p.RetentionDays != 3 || r.header.Get("ETag") == projectETag {
					t.Fatalf("B's create answered %s (ETag %s), not B's new project", r.body, r.header.Get("ETag"))
				}
			}}},
		},
		"GET /v1/projects":            {{admin: list, rt: list}},
		"GET /v1/projects/:projectId": {{admin: isoNotFound, rt: isoNotFound}},

		"POST /v1/runs": {{body: enqueue("iso-b-run", "iso", projectA, ""), admin: isoForbidden, rt: isoExpect{check: func(t *testing.T, r response) {
			// B's own scope: unknown_project unless B has a project of that id, then B's own run.
			if r.status != http.StatusCreated {
				wantProblem(t, r, http.StatusUnprocessableEntity, "unknown_project")
				t.Logf("B has no project %s: unknown_project", projectA)
				return
			}
			t.Logf("B's own project %s: B's own run", projectA)
			id := str(t, r, "runId")
			wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/v1/runs/" + id, key: rtB}), http.StatusOK)
			wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/runs/" + id, key: adminA}), http.StatusNotFound, "not_found")
		}}}},
		"POST /v1/runs/claim": {{body: claimBody("hb", releaseA, "iso"), admin: isoForbidden,
			rt: isoExpect{status: http.StatusUnprocessableEntity, code: "release_not_active"}}},
		"GET /v1/runs": {
			{admin: list, rt: list},
			{name: "ByProject", query: "?projectId=" + projectA, admin: list, rt: list},
			{name: "Leased", query: "?state=leased", admin: list, rt: list},
			{name: "Claimed", query: "?attemptsMin=1", admin: list, rt: list},
		},
		"GET /v1/runs/:runId": {{admin: isoNotFound, rt: isoNotFound}},
		"POST /v1/runs/batch": {{body: `{"items":[` + enqueue("iso-b-batch", "iso", projectA, "") + `]}`,
			admin: isoExpect{check: ownBatch}, rt: isoExpect{check: ownBatch}}},
		// If-Match of A's schedule: B has no such schedule, so it is a precondition failure
		// (as for any id B lacks), decided before the run's project is looked at.
		"PUT /v1/schedules/:scheduleId": {{name: "IfMatchOfA", ifMatch: scheduleETag,
			body:  `{"cron":"@daily","run":` + enqueue("iso-b-sched", "iso", projectA, "") + `}`,
			admin: isoExpect{status: http.StatusPreconditionFailed, code: "precondition_failed"}, rt: isoForbidden}},
		"GET /v1/schedules":               {{admin: list, rt: list}},
		"GET /v1/operations/:operationId": {{admin: isoNotFound, rt: isoForbidden}},
		// B's bulk operation naming A's run: B's runner finds no such run of B's.
		"POST /v1/runs/bulk": {{body: `{"action":"cancel","runIds":["` + run1 + `"]}`, rt: isoForbidden,
			admin: isoExpect{check: func(t *testing.T, r response) {
				t.Helper()
				wantStatus(t, r, http.StatusAccepted)
				if _, err := s.app.Operations.Tick(context.Background()); err != nil {
					t.Fatal(err)
				}
				op := decode[api.Operation](t, s.do(t, req{method: http.MethodGet, path: "/v1/operations/" + str(t, r, "operationId"), key: adminB}))
				if op.State != api.OperationSucceeded || op.Skips.NotFound != 1 || op.Done != 0 {
					t.Fatalf("B's operation over A's run: %+v", op)
				}
				if st := str(t, s.do(t, req{method: http.MethodGet, path: "/v1/runs/" + run1, key: adminA}), "state"); st != "leased" {
					t.Fatalf("A's run is %s", st)
				}
			}}}},
		"GET /v1/schedules/:scheduleId":    {{admin: isoNotFound, rt: isoNotFound}},
		"DELETE /v1/schedules/:scheduleId": {{admin: isoNotFound, rt: isoForbidden}},
		"POST /v1/runs/:runId/cancel":      {{admin: isoNotFound, rt: isoForbidden}},
		"POST /v1/runs/:runId/continue": {
			{params: map[string]string{"runId": run2}, admin: isoNotFound, rt: isoNotFound},
			{name: "WithBody", params: map[string]string{"runId": run2}, body: `{"snapshotId":"` + uuid.NewString() + `"}`, admin: isoNotFound, rt: isoNotFound},
		},
		"POST /v1/runs/:runId/fork":                 {{body: `{"checkpointId":"` + checkpoint + `"}`, admin: isoNotFound, rt: isoNotFound}},
		"POST /v1/attempts/:attemptId/heartbeat":    {{body: fence(`,"leaseSeconds":60`), admin: isoForbidden, rt: isoNotFound}},
		"POST /v1/attempts/:attemptId/release":      {{body: fence(`,"charge":true`), admin: isoForbidden, rt: isoNotFound}},
		"POST /v1/attempts/:attemptId/complete":     {{body: fence(`,"state":"failed"`), admin: isoForbidden, rt: isoNotFound}},
		"PATCH /v1/attempts/:attemptId":             {{body: fence(`,"phase":"finalizing","correction":true`), admin: isoForbidden, rt: isoNotFound}},
		"POST /v1/attempts/:attemptId/cancellation": {{body: fence(""), admin: isoForbidden, rt: isoNotFound}},
		"POST /v1/attempts/:attemptId/park": {{body: fence(`,"dueAt":"2099-01-01T00:00:00.000Z"`), admin: isoForbidden,
			rt: isoNotFound}},
		// Lock ids are B's own: B takes and lets go of its own lock of the same ids.
		"PUT /v1/locks/agents/:agentId/tasks/:taskId": {{body: fmt.Sprintf(`{"holderId":%q,"ttlSeconds":60}`, holderA), admin: isoForbidden,
			rt: isoExpect{check: func(t *testing.T, r response) {
				wantStatus(t, r, http.StatusOK)
				if str(t, r, "heldUntil") == lockUntil {
					t.Fatalf("B's lock answered A's lock: %s", r.body)
				}
			}}}},
		"DELETE /v1/locks/agents/:agentId/tasks/:taskId": {{query: "?holderId=" + holderA, admin: isoForbidden,
			rt: isoExpect{status: http.StatusNoContent}}},

		"POST /v1/attempts/:attemptId/checkpoints": {{admin: isoForbidden, rt: isoNotFound,
			body: fence(fmt.Sprintf(`,"sequence":1,"phase":"acting","adapterStateRef":"x://s1","adapterVersion":%q,"hash":"h1"`, adapterA))}},
		"GET /v1/attempts/:attemptId/checkpoints":               {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/attempts/:attemptId/checkpoints/:checkpointId": {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/runs/:runId/checkpoints/last":                  {{admin: isoNotFound, rt: isoNotFound}},

		"POST /v1/attempts/:attemptId/calls": {{admin: isoForbidden, rt: isoNotFound,
			body: fence(`,"sequence":1,"kind":"tool","target":"t","requestHash":"rh1"`)}},
		"PATCH /v1/attempts/:attemptId/calls/:callId": {
			{name: "IfMatchOfA", ifMatch: callETag, body: fence(`,"status":"succeeded","receiptRef":"x://r"`), admin: isoForbidden, rt: isoNotFound},
			{name: "NoIfMatch", body: fence(`,"status":"denied"`), admin: isoForbidden, rt: isoNotFound},
		},
		"GET /v1/attempts/:attemptId/calls": {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/calls": {
			{admin: list, rt: list},
			{name: "Ended", query: "?endedFrom=2000-01-01T00:00:00Z&reportedUsage=false", admin: list, rt: list},
		},
		"GET /v1/attempts/:attemptId/calls/:callId": {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/attempts/:attemptId/usage":         {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/runs/:runId/usage":                 {{admin: isoNotFound, rt: isoNotFound}},

		"POST /v1/attempts/:attemptId/decisions": {{body: fence(`,"kind":"choice","options":[1,2]`), admin: isoForbidden, rt: isoNotFound}},
		"GET /v1/attempts/:attemptId/decisions":  {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/runs/:runId/decisions":          {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/decisions": {
			{admin: list, rt: isoForbidden},
			{name: "Pending", query: "?status=pending", admin: list, rt: isoForbidden},
		},
		"GET /v1/decisions/:decisionId": {{admin: isoNotFound, rt: isoNotFound}},
		"POST /v1/decisions/:decisionId/answer": {{ifMatch: decisionETag, body: `{"status":"approved","answer":{"ok":true}}`,
			admin: isoNotFound, rt: isoForbidden}},

		"POST /v1/attempts/:attemptId/delegations": {{admin: isoForbidden, rt: isoNotFound,
			body: fence(`,"purpose":"p","child":` + enqueue("iso-b-child", "iso-child", projectA, ""))}},
		"GET /v1/attempts/:attemptId/delegations": {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/delegations/:delegationId":       {{admin: isoNotFound, rt: isoNotFound}},

		// Release ids are global: B cannot register A's pair, nor move it.
		"PUT /v1/releases/:releaseId/adapters/:adapterVersion": {
			{name: "IfMatchOfA", ifMatch: releaseETag, body: releaseBody("retired"),
				admin: isoExpect{status: http.StatusPreconditionFailed, code: "precondition_failed"},
				rt:    isoExpect{status: http.StatusPreconditionFailed, code: "precondition_failed"}},
			{name: "Register", body: releaseBody("active"),
				admin: isoExpect{status: http.StatusConflict, code: "release_conflict"},
				rt:    isoExpect{status: http.StatusConflict, code: "release_conflict"}},
		},
		"GET /v1/releases": {
			{admin: list, rt: list},
			{name: "Active", query: "?state=active", admin: list, rt: list},
		},
		"GET /v1/releases/:releaseId/adapters/:adapterVersion": {{admin: isoNotFound, rt: isoNotFound}},

		// Insights (internal/insights): admin only, B's own history only.
		"GET /v1/insights/runs": {
			{admin: insight, rt: isoForbidden},
			{name: "ByProject", query: "?groupBy=project&bucket=1d", admin: insight, rt: isoForbidden},
			{name: "ByRelease", query: "?groupBy=release&projectId=" + projectA, admin: insight, rt: isoForbidden},
		},
		"GET /v1/insights/attempts":         {{query: "?groupBy=release", admin: insight, rt: isoForbidden}},
		"GET /v1/insights/leases-lost":      {{query: "?groupBy=agent", admin: insight, rt: isoForbidden}},
		"GET /v1/insights/attempts-per-run": {{query: "?groupBy=project", admin: insight, rt: isoForbidden}},
		"GET /v1/insights/claim-latency":    {{query: "?groupBy=kind", admin: insight, rt: isoForbidden}},
		"GET /v1/insights/calls":            {{admin: insight, rt: isoForbidden}},
		"GET /v1/insights/usage":            {{admin: insight, rt: isoForbidden}},
		"GET /v1/insights/decisions":        {{admin: insight, rt: isoForbidden}},

		// History (internal/history), once wired.
		"GET /v1/attempts": {
			{admin: list, rt: list},
			{name: "ByRun", query: "?runId=" + run1, admin: list, rt: list},
			{name: "Ended", query: "?endedFrom=2000-01-01T00:00:00Z", admin: list, rt: list},
		},
		// Webhooks (internal/webhooks): admin only; B makes its own endpoint under another name.
		"PUT /v1/webhooks/:webhookName": {{params: map[string]string{"webhookName": "iso-b-hook"},
			body: `{"url":"https://203.0.113.9/b","events":["run.ended"]}`, admin: isoExpect{status: http.StatusCreated}, rt: isoForbidden}},
		"GET /v1/webhooks":                                  {{admin: list, rt: isoForbidden}},
		"GET /v1/webhooks/:webhookName":                     {{admin: isoNotFound, rt: isoForbidden}},
		"DELETE /v1/webhooks/:webhookName":                  {{admin: isoNotFound, rt: isoForbidden}},
		"POST /v1/webhooks/:webhookName/rotate-secret":      {{admin: isoNotFound, rt: isoForbidden}},
		"GET /v1/webhook-deliveries":                        {{admin: list, rt: isoForbidden}},
		"POST /v1/webhook-deliveries/:deliveryId/redeliver": {{admin: isoNotFound, rt: isoForbidden}},
		"GET /v1/attempts/:attemptId":                       {{admin: isoNotFound, rt: isoNotFound}},
		"GET /v1/attempts/:attemptId/timeline":              {{admin: isoNotFound, rt: isoNotFound}},
	}

	// Reads first, so that B's answers to them do not depend on B's own creates below.
	order := slices.Clone(ops)
	slices.SortStableFunc(order, func(a, b string) int {
		ga, gb := strings.HasPrefix(a, "GET "), strings.HasPrefix(b, "GET ")
		switch {
		case ga && !gb:
			return -1
		case gb && !ga:
			return 1
		}
		return 0
	})
	for _, op := range order {
		probes, ok := table[op]
		if !ok {
			t.Errorf("route %s has no entry in the tenant isolation matrix", op)
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		for _, p := range probes {
			vals := maps(values, p.params)
			full, err := fillPath(path, vals)
			if err != nil {
				t.Errorf("%s: %v", op, err)
				continue
			}
			for _, k := range []struct {
				role, key string
				want      isoExpect
			}{{"admin", adminB, p.admin}, {"runtime", rtB, p.rt}} {
				name := op + "/" + p.name + "/" + k.role
				t.Run(name, func(t *testing.T) {
					rq := req{method: method, path: full + p.query, key: k.key, body: p.body}
					if p.ifMatch != "" {
						rq.header = map[string]string{"If-Match": p.ifMatch}
					}
					r := s.do(t, rq)
					switch {
					case k.want.check != nil:
						k.want.check(t, r)
					case k.want.code != "":
						got := wantProblem(t, r, k.want.status, k.want.code)
						if k.want.status == http.StatusNotFound {
							// Exactly as a missing id answers.
							miss := missingValues(vals)
							mp, err := fillPath(path, miss)
							if err != nil {
								t.Fatal(err)
							}
							rq.path = mp + p.query
							want := wantProblem(t, s.do(t, rq), http.StatusNotFound, "not_found")
							norm := func(d string, m map[string]string) string {
								for _, v := range m {
									d = strings.ReplaceAll(d, v, "ID")
								}
								return d
							}
							if norm(got.Detail, vals) != norm(want.Detail, miss) {
								t.Fatalf("A's ids answer %q, missing ones %q", got.Detail, want.Detail)
							}
						}
					default:
						wantStatus(t, r, k.want.status)
					}
					for _, id := range aIDs {
						if r.status >= 400 && bytes.Contains(r.body, []byte(id)) && !strings.Contains(full+p.query+p.body, id) {
							t.Fatalf("the answer names A's %s: %s", id, r.body)
						}
					}
				})
			}
		}
	}

	// 5. Nothing of A changed.
	after := snapshot()
	for p, b := range before {
		if a := after[p]; a != b {
			t.Errorf("tenant A's %s changed:\n before %d %s %s\n after  %d %s %s", p, b.status, b.etag, b.body, a.status, a.etag, a.body)
		}
	}
	// A's lock is still A's, held until the same time.
	r = s.do(t, req{method: http.MethodPut, path: lockPath, key: rtA, body: `{"holderId":"intruder","ttlSeconds":60}`})
	p := wantProblem(t, r, http.StatusConflict, "lock_held")
	var held struct {
		HeldUntil string `json:"heldUntil"`
	}
	if err := json.Unmarshal(r.body, &held); err != nil {
		t.Fatal(err)
	}
	t1, err1 := time.Parse(time.RFC3339Nano, held.HeldUntil)
	t2, err2 := time.Parse(time.RFC3339Nano, lockUntil)
	if err1 != nil || err2 != nil || !t1.Equal(t2) {
		t.Errorf("A's lock is held until %q (%s), was %q", held.HeldUntil, p.Detail, lockUntil)
	}
}

// maps returns base with over applied.
func maps(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// missingValues gives each path parameter of path a value no tenant has.
func missingValues(vals map[string]string) map[string]string {
	out := map[string]string{}
	for k := range vals {
		if isoUUIDParams[k] {
			out[k] = uuid.NewString()
		} else {
			out[k] = "iso-missing-" + k
		}
	}
	return out
}

// sameDetail checks two problems read alike once their ids are set aside.
func sameDetail(t *testing.T, other, missing problem, otherID, missingID string) {
	t.Helper()
	if strings.ReplaceAll(other.Detail, otherID, "ID") != strings.ReplaceAll(missing.Detail, missingID, "ID") {
		t.Fatalf("another tenant's reference answers %q, a missing one %q", other.Detail, missing.Detail)
	}
}

// jsonEqual reports whether two JSON values are equal as values.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
