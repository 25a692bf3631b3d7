package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestOTLPExportSurvivesKill9 kills `ledger serve` with SIGKILL while its collector holds the
// first export unanswered (the batch sent, the position not yet moved), restarts it on the
// same file, and checks that the collector ends with every span, and that a span sent again
// is the same span, byte for byte.
func TestOTLPExportSurvivesKill9(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	var (
		mu       sync.Mutex
		spans    = map[string][]byte{}
		differ   int
		first    = make(chan struct{})
		release  = make(chan struct{})
		received int
	)
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		received++
		n := received
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					b, _ := proto.Marshal(sp)
					id := hex.EncodeToString(sp.SpanId)
					if prev, ok := spans[id]; ok && !bytes.Equal(prev, b) {
						differ++
					}
					spans[id] = b
				}
			}
		}
		mu.Unlock()
		if n == 1 {
			close(first)
			select { // hold the first export until the sender is dead
			case <-release:
			case <-time.After(30 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(col.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	db := filepath.Join(t.TempDir(), "ledger.db")
	endpoint := []string{"--otlp-endpoint", col.URL + "/v1/traces"}
	p := startServe(t, bin, db, endpoint...)
	base := "http://" + p.waitAddr(t, 90*time.Second)
	var admin, runtime string
	for deadline := time.Now().Add(20 * time.Second); admin == "" || runtime == ""; time.Sleep(20 * time.Millisecond) {
		admin, _ = p.keyLine("admin key: ")
		runtime, _ = p.keyLine("runtime key: ")
		if time.Now().After(deadline) {
			t.Fatal("no keys printed")
		}
	}
	if code, _ := httpDo(t, http.MethodPut, base+"/v1/projects/p1", admin, `{}`); code != http.StatusCreated {
		t.Fatalf("create the project: %d", code)
	}
	refs := `["x://otlp"]`
	sum := sha256.Sum256([]byte(refs))
	if code, _ := httpDo(t, http.MethodPut, base+"/v1/releases/rel/adapters/1.0", runtime,
		fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)); code != http.StatusCreated {
		t.Fatal("register the release")
	}
	const runs = 20
	for i := range runs {
		if code, _ := httpDo(t, http.MethodPost, base+"/v1/runs", runtime, fmt.Sprintf(`{"subject":"otlp-%d","kind":"review",`+
			`"projectId":"p1","agentId":"agent-1","stepId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e51","snapshotId":"0b7e7dd0-3a53-4c5a-9a8e-2f1b2d3c4e52"}`, i)); code != http.StatusCreated {
			t.Fatalf("enqueue %d: %d", i, code)
		}
		var cl struct {
			Attempt struct {
				AttemptID string `json:"attemptId"`
			} `json:"attempt"`
			Lease struct {
				FencingToken int64 `json:"fencingToken"`
			} `json:"lease"`
		}
		postJSON(t, base+"/v1/runs/claim", runtime, `{"holderId":"h","releaseId":"rel","adapterVersion":"1.0","modelProfileId":"m"}`, &cl)
		if code, _ := httpDo(t, http.MethodPost, base+"/v1/attempts/"+cl.Attempt.AttemptID+"/complete", runtime,
			fmt.Sprintf(`{"fencingToken":%d,"state":"succeeded"}`, cl.Lease.FencingToken)); code != http.StatusOK {
			t.Fatalf("complete %d: %d", i, code)
		}
	}
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		t.Fatal("nothing was exported within a minute")
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	close(release)

	// The new process takes the export over once the dead one's lease has passed (30 s).
	p2 := startServe(t, bin, db, endpoint...)
	p2.waitAddr(t, 90*time.Second)
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n, resent, d := len(spans), received, differ
		mu.Unlock()
		if n == 2*runs && resent > 1 {
			if d != 0 {
				t.Fatalf("%d spans came back different on the second export", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector has %d spans after %d exports, want %d (a run and an attempt per run) sent again after the kill", n, resent, 2*runs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postJSON posts body with key and decodes a 200 answer into out.
func postJSON(t *testing.T, url, key, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
