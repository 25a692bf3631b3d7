package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// TestShutdownAnswersWaitsAtOnce: a GET waiting for a run's end (waitSeconds=30) answers
// 200 with the run as it is as soon as the server begins to drain, and the server stops
// without waiting out the wait.
func TestShutdownAnswersWaitsAtOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	a := apitest.New(t, apitest.Config{DB: db}).App
	tenant := dbtest.NewTenant(t, db)
	keys := tenancy.NewStore(db)
	admin, _, err := keys.CreateKey(context.Background(), tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtime, _, err := keys.CreateKey(context.Background(), tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- a.Server.Start(ctx, "127.0.0.1:0", 20*time.Second, func(s string) { addr <- s }) }()
	base := "http://" + <-addr
	send := func(method, path, key, body string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if st, b := send(http.MethodPut, "/v1/projects/p1", admin, `{}`); st != http.StatusCreated {
		t.Fatalf("create project: %d %s", st, b)
	}
	st, b := send(http.MethodPost, "/v1/runs", runtime, `{"subject":"s","kind":"k","projectId":"p1","agentId":"a",`+
		`"stepId":"6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d","snapshotId":"0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f"}`)
	if st != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", st, b)
	}
	var run struct {
		RunID string `json:"runId"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   []byte
	}
	got := make(chan answer, 1)
	go func() {
		st, b := send(http.MethodGet, "/v1/runs/"+run.RunID+"?waitSeconds=30", runtime, "")
		got <- answer{st, b}
	}()
	k := runs.RunKey(tenant, uuid.MustParse(run.RunID))
	for deadline := time.Now().Add(20 * time.Second); a.Runs.Waits().Waiting(k) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the wait never began")
		}
	}
	began := time.Now()
	stop()
	ans := <-got
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Fatalf("shutdown took %s: the wait held the drain", took)
	}
	if ans.status != http.StatusOK || !strings.Contains(string(ans.body), `"state":"queued"`) {
		t.Fatalf("the wait answered %d %s, want 200 with the queued run", ans.status, ans.body)
	}
}
