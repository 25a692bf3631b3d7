package locks_test

import (
	"encoding/json"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

func TestHTTPTaskLocks(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{})
	_, _, runtime := s.TenantKeys(t)
	_, _, other := s.TenantKeys(t)
	path := "/v1/locks/agents/agent-1/tasks/nightly"
	var l map[string]any
	r := s.Do(t, "PUT", path, runtime, `{"holderId":"h1","ttlSeconds":60}`, nil)
	if _ = json.Unmarshal(r.Body, &l); r.Status != 200 || l["holderId"] != "h1" {
		t.Fatalf("acquire: %d %v", r.Status, l)
	}
	var p struct {
		Code      string `json:"code"`
		HeldUntil string `json:"heldUntil"`
	}
	r = s.Do(t, "PUT", path, runtime, `{"holderId":"h2","ttlSeconds":60}`, nil)
	if _ = json.Unmarshal(r.Body, &p); r.Status != 409 || p.Code != "lock_held" || p.HeldUntil == "" {
		t.Fatalf("held: %d %+v", r.Status, p)
	}
	if r := s.Do(t, "DELETE", path, runtime, ``, nil); r.Status != 400 {
		t.Fatalf("release without holderId: %d", r.Status)
	}
	apitest.WantProblem(t, s.Do(t, "DELETE", path+"?holderId=h2", runtime, ``, nil), 409, "lock_held")
	apitest.WantStatus(t, s.Do(t, "PUT", path, other, `{"holderId":"x","ttlSeconds":60}`, nil), 200)
	apitest.WantStatus(t, s.Do(t, "DELETE", path+"?holderId=h1", runtime, ``, nil), 204)
	apitest.WantStatus(t, s.Do(t, "PUT", path, runtime, `{"holderId":"h2","ttlSeconds":60}`, nil), 200)
}
