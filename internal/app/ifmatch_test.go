package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/internal/app"
)

// ifMatchTarget makes resources of one route that takes If-Match: existing gives the path
// of a resource that exists, a body that changes it and its current ETag; fresh, for a
// route that creates, the path and body of one that does not exist yet.
type ifMatchTarget struct {
	key      string
	existing func(t *testing.T) (path, body, etag string)
	fresh    func(t *testing.T) (path, body string)
}

// TestIfMatchModeIsEnforcedAsDocumented walks every route whose document takes If-Match and
// holds what it answers to the mode the document shows (required parameter: ifmatch.Required;
// optional with a 428: ifmatch.ToUpdate; optional without: ifmatch.Optional). The document is
// built from the route's Op; the answers come from web.IfMatch and, for ToUpdate, the store:
// a route whose enforcement drifts from its declaration fails here, and a new route that
// takes If-Match fails until it has a target.
func TestIfMatchModeIsEnforcedAsDocumented(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	w := newWorld(t, s)
	n := 0
	next := func() int { n++; return n }
	etagOf := func(t *testing.T, path string) string {
		t.Helper()
		r := s.do(t, req{method: http.MethodGet, path: path, key: w.admin})
		wantStatus(t, r, http.StatusOK)
		return r.header.Get("ETag")
	}
	releaseBody := func(state string) string {
		refs := `["x://w"]`
		sum := sha256.Sum256([]byte(refs))
		return fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":%q}`, hex.EncodeToString(sum[:]), refs, state)
	}
	// An address literal: nothing resolves it, and no dispatcher runs here to dial it.
	const webhookBody = `{"url":"https://203.0.113.9/hook","events":["run.ended"]}`
	at := "/v1/attempts/" + w.values["attemptId"]
	scheduleBody := func(cron string) string {
		return fmt.Sprintf(`{"cron":%q,"run":{"subject":"im","kind":"w","projectId":"w-proj","agentId":"w-agent","stepId":"%s","snapshotId":"%s"}}`,
			cron, "6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d", "0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f")
	}
	calls := 0 // the world's call took sequence 0
	targets := map[string]ifMatchTarget{
		"PUT /v1/projects/:projectId": {key: w.admin,
			existing: func(t *testing.T) (string, string, string) {
				p := fmt.Sprintf("/v1/projects/im-%d", next())
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: p, key: w.admin, body: `{}`}), http.StatusCreated)
				return p, `{"retentionDays":30}`, etagOf(t, p)
			},
			fresh: func(*testing.T) (string, string) { return fmt.Sprintf("/v1/projects/im-%d", next()), `{}` },
		},
		"PUT /v1/releases/:releaseId/adapters/:adapterVersion": {key: w.runtime,
			existing: func(t *testing.T) (string, string, string) {
				p := fmt.Sprintf("/v1/releases/w-rel/adapters/im-%d", next())
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: p, key: w.runtime, body: releaseBody("active")}), http.StatusCreated)
				return p, releaseBody("draining"), etagOf(t, p)
			},
			fresh: func(*testing.T) (string, string) {
				return fmt.Sprintf("/v1/releases/w-rel/adapters/im-%d", next()), releaseBody("active")
			},
		},
		"PUT /v1/webhooks/:webhookName": {key: w.admin,
			existing: func(t *testing.T) (string, string, string) {
				p := fmt.Sprintf("/v1/webhooks/im-%d", next())
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: p, key: w.admin, body: webhookBody}), http.StatusCreated)
				return p, webhookBody, etagOf(t, p)
			},
			fresh: func(*testing.T) (string, string) { return fmt.Sprintf("/v1/webhooks/im-%d", next()), webhookBody },
		},
		"POST /v1/decisions/:decisionId/answer": {key: w.admin,
			existing: func(t *testing.T) (string, string, string) {
				r := s.do(t, req{method: http.MethodPost, path: at + "/decisions", key: w.runtime,
					body: fmt.Sprintf(`{"fencingToken":%s,"kind":"approval","expiresInSeconds":86400}`, w.token)})
				wantStatus(t, r, http.StatusCreated)
				p := "/v1/decisions/" + decode[map[string]any](t, r)["decisionId"].(string)
				return p + "/answer", `{"status":"approved"}`, etagOf(t, p)
			},
		},
		"PUT /v1/schedules/:scheduleId": {key: w.admin,
			existing: func(t *testing.T) (string, string, string) {
				p := fmt.Sprintf("/v1/schedules/im-%d", next())
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: p, key: w.admin, body: scheduleBody("@daily")}), http.StatusCreated)
				return p, scheduleBody("@hourly"), etagOf(t, p)
			},
			fresh: func(*testing.T) (string, string) {
				return fmt.Sprintf("/v1/schedules/im-%d", next()), scheduleBody("@daily")
			},
		},
		"PATCH /v1/attempts/:attemptId/calls/:callId": {key: w.runtime,
			existing: func(t *testing.T) (string, string, string) {
				calls++
				r := s.do(t, req{method: http.MethodPost, path: at + "/calls", key: w.runtime,
					body: fmt.Sprintf(`{"fencingToken":%s,"sequence":%d,"kind":"tool","target":"t","requestHash":"rh"}`, w.token, calls)})
				wantStatus(t, r, http.StatusCreated)
				p := at + "/calls/" + decode[map[string]any](t, r)["callId"].(string)
				return p, fmt.Sprintf(`{"fencingToken":%s,"status":"succeeded"}`, w.token), etagOf(t, p)
			},
		},
	}
	const stale = `"00000000000000ff"`
	modes := map[string]int{}
	for _, r := range routeTable(t, s) {
		taken, required := false, false
		for _, p := range r.op.Parameters {
			if p.In == "header" && p.Name == "If-Match" {
				taken, required = true, p.Required
			}
		}
		if !taken {
			continue
		}
		name := r.method + " " + r.path
		tg, ok := targets[name]
		if !ok {
			t.Errorf("%s takes If-Match but this test has no target for it", name)
			continue
		}
		_, may428 := r.op.Responses["428"]
		mode := "optional"
		switch {
		case required:
			mode = "required"
		case may428:
			mode = "to-update"
		}
		modes[mode]++
		send := func(method, path, body, ifMatch string) response {
			h := map[string]string{}
			if ifMatch != "" {
				h["If-Match"] = ifMatch
			}
			return s.do(t, req{method: method, path: path, key: tg.key, body: body, header: h})
		}
		t.Run(name, func(t *testing.T) {
			// A stale condition is 412 whatever the mode, and changes nothing.
			path, body, _ := tg.existing(t)
			wantProblem(t, send(r.method, path, body, stale), http.StatusPreconditionFailed, "precondition_failed")
			// Without a condition: 428 unless the mode lets a change go without one.
			path, body, _ = tg.existing(t)
			if res := send(r.method, path, body, ""); mode == "optional" {
				wantStatus(t, res, http.StatusOK)
			} else {
				wantProblem(t, res, http.StatusPreconditionRequired, "precondition_required")
			}
			// The current ETag changes it.
			path, body, etag := tg.existing(t)
			wantStatus(t, send(r.method, path, body, etag), http.StatusOK)
			if tg.fresh == nil {
				return
			}
			// A create: no condition can hold on what does not exist (412); without one,
			// created unless every request must send one.
			path, body = tg.fresh(t)
			wantProblem(t, send(r.method, path, body, "*"), http.StatusPreconditionFailed, "precondition_failed")
			if res := send(r.method, path, body, ""); mode == "required" {
				wantProblem(t, res, http.StatusPreconditionRequired, "precondition_required")
			} else {
				wantStatus(t, res, http.StatusCreated)
			}
		})
	}
	if len(modes) != 3 || len(targets) != modes["optional"]+modes["required"]+modes["to-update"] {
		t.Errorf("routes by documented If-Match mode %v; want all three modes and every target walked", modes)
	}
	checkStatusesDocumented(t, s)
}
