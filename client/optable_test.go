package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/client"
)

// TestCallsTakeTheirRouteFromTheOperationTable: a call's method and path come from its
// operation's row, each path parameter escaped as one segment, and an empty parameter is
// refused before anything is sent (as the TypeScript and Python SDKs refuse it).
func TestCallsTakeTheirRouteFromTheOperationTable(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		got.Store(r.Method + " " + r.URL.EscapedPath())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(client.WithBaseURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.GetRelease(ctx, "r/1", "v 2"); err != nil {
		t.Fatal(err)
	}
	if want := "GET /v1/releases/r%2F1/adapters/v%202"; got.Load() != want {
		t.Fatalf("sent %v, want %s", got.Load(), want)
	}
	if err := c.ReleaseLock(ctx, "a", "t", "h"); err != nil {
		t.Fatal(err)
	}
	if want := "DELETE /v1/locks/agents/a/tasks/t"; got.Load() != want {
		t.Fatalf("sent %v, want %s", got.Load(), want)
	}
	before := n.Load()
	_, _, err = c.GetProject(ctx, "")
	if err == nil || !strings.Contains(err.Error(), "getProject: projectId is required") {
		t.Fatalf("GetProject(\"\"): %v", err)
	}
	if n.Load() != before {
		t.Fatal("a call with an empty path parameter was sent")
	}
}

// presentCases are api/retry.json's whenBody rule ("present and not null, false or empty"),
// the same cases in the three SDKs' tests.
const presentCases = `[[{"k": "x"}, "k", true], [{"k": ""}, "k", false], [{"k": 0}, "k", true], [{"k": false}, "k", false],
 [{"k": true}, "k", true], [{"k": []}, "k", false], [{"k": {}}, "k", false], [{"k": {"a": 1}}, "k", true],
 [{"k": null}, "k", false], [{}, "k", false], [{"a": {"k": "x"}}, "a.k", true], [{"a": "s"}, "a.k", false]]`

func TestWhenBodyPresence(t *testing.T) {
	t.Parallel()
	var cases [][3]any
	if err := json.Unmarshal([]byte(presentCases), &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := client.Present(c[0], c[1].(string)); got != c[2].(bool) {
			t.Errorf("present(%v, %v) = %v, want %v", c[0], c[1], got, c[2])
		}
	}
}
