package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is one `ledger serve` process and what it has printed so far.
type server struct {
	cmd    *exec.Cmd
	addr   chan string   // the listening address, once
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before exited closes

	mu     sync.Mutex
	stdout []string
	stderr []string
}

func (s *server) lines(stdout bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stdout {
		return append([]string(nil), s.stdout...)
	}
	return append([]string(nil), s.stderr...)
}

// startServe starts `ledger serve` on db at a free port. The process is killed at the end of
// the test if it is still running.
func startServe(t *testing.T, bin, db string, extra ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--shutdown-grace", "10s"}, extra...)...)
	// Only the flags above configure it: no LEDGER_* variable of the test's environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, addr: make(chan string, 1), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() {
		defer pipes.Done()
		s.collect(stdout, &s.stdout, nil)
	}()
	go func() {
		defer pipes.Done()
		s.collect(stderr, &s.stderr, func(line string) {
			var entry struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" && entry.Addr != "" {
				select {
				case s.addr <- entry.Addr:
				default:
				}
			}
		})
	}()
	go func() {
		pipes.Wait() // Wait closes the pipes: read them to the end first
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	return s
}

func (s *server) collect(r io.Reader, into *[]string, each func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		*into = append(*into, line)
		s.mu.Unlock()
		if each != nil {
			each(line)
		}
	}
}

// waitAddr returns the address the server listens on, failing if it exits first.
func (s *server) waitAddr(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case a := <-s.addr:
		return a
	case <-s.exited:
		t.Fatalf("serve exited before listening: %v\nstderr:\n%s", s.err, strings.Join(s.lines(false), "\n"))
	case <-time.After(timeout):
		t.Fatalf("serve did not listen within %s\nstderr:\n%s", timeout, strings.Join(s.lines(false), "\n"))
	}
	return ""
}

// keyLine returns the value of the stdout line starting with prefix, if any.
func (s *server) keyLine(prefix string) (string, int) {
	var v string
	n := 0
	for _, l := range s.lines(true) {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			v = strings.TrimSpace(rest)
			n++
		}
	}
	return v, n
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: tests that build the binary and run it as a process are skipped")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build the binary for the two-process test")
	}
	bin := filepath.Join(t.TempDir(), "ledger")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func httpDo(t *testing.T, method, url, key, body string) (int, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header
}

// TestTwoServeProcessesShareAFreshDatabase starts two processes at once on one new SQLite
// file: they migrate and bootstrap under the file lock, so exactly one prints the keys, both
// serve the same data, and both shut down cleanly on SIGTERM.
func TestTwoServeProcessesShareAFreshDatabase(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "data", "ledger.db")
	// serve creates the file, in a directory that exists (or with --create-dir).
	if err := os.MkdirAll(filepath.Dir(db), 0o750); err != nil {
		t.Fatal(err)
	}

	// Started back to back: both reach the migration lock while the file is new.
	procs := [2]*server{startServe(t, bin, db), startServe(t, bin, db)}
	var addrs [2]string
	for i, p := range procs {
		addrs[i] = "http://" + p.waitAddr(t, 90*time.Second)
	}
	for i, a := range addrs {
		if code, _ := httpDo(t, http.MethodGet, a+"/readyz", "", ""); code != http.StatusOK {
			t.Fatalf("process %d: /readyz %d", i, code)
		}
	}

	// The bootstrap lines are printed before "listening", but the pipe may lag a little.
	var admin, runtime string
	deadline := time.Now().Add(20 * time.Second)
	for admin == "" || runtime == "" {
		for _, p := range procs {
			if a, _ := p.keyLine("admin key: "); a != "" {
				admin = a
			}
			if r, _ := p.keyLine("runtime key: "); r != "" {
				runtime = r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process printed the bootstrap keys\nstdout 0: %q\nstdout 1: %q", procs[0].lines(true), procs[1].lines(true))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The printed keys work against both processes, which share the data.
	code, h := httpDo(t, http.MethodPut, addrs[0]+"/v1/projects/shared", admin, `{"retentionDays": 9}`)
	if code != http.StatusCreated {
		t.Fatalf("create on process 0: %d", code)
	}
	etag := h.Get("ETag")
	code, h = httpDo(t, http.MethodGet, addrs[1]+"/v1/projects/shared", admin, "")
	if code != http.StatusOK || h.Get("ETag") != etag {
		t.Fatalf("read on process 1: %d ETag %q, want 200 %q", code, h.Get("ETag"), etag)
	}
	for i, a := range addrs {
		if code, _ := httpDo(t, http.MethodGet, a+"/v1/projects", runtime, ""); code != http.StatusOK {
			t.Fatalf("runtime key on process %d: %d", i, code)
		}
		if code, _ := httpDo(t, http.MethodPut, a+"/v1/projects/r", runtime, `{}`); code != http.StatusForbidden {
			t.Fatalf("runtime key creating a project on process %d: %d, want 403", i, code)
		}
	}

	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("process %d did not stop within 30 s of SIGTERM", i)
		}
		if p.err != nil {
			t.Fatalf("process %d: %v (want exit 0)\nstderr:\n%s", i, p.err, strings.Join(p.lines(false), "\n"))
		}
	}

	// Now that both have exited, their output is complete.
	printed := 0
	for i, p := range procs {
		_, admins := p.keyLine("admin key: ")
		_, runtimes := p.keyLine("runtime key: ")
		switch {
		case admins == 1 && runtimes == 1:
			printed++
		case admins == 0 && runtimes == 0:
		default:
			t.Fatalf("process %d printed %d admin and %d runtime key lines", i, admins, runtimes)
		}
	}
	if printed != 1 {
		t.Fatalf("%d processes printed bootstrap keys, want exactly 1\nstdout 0: %q\nstdout 1: %q", printed, procs[0].lines(true), procs[1].lines(true))
	}
}

// TestSIGTERMAnswersWaitingClaimsAtOnce is issue 17 item 11, with a child process and a real
// signal: long-poll claims waiting for work when SIGTERM comes answer 204 with Retry-After
// at once (they used to hold shutdown for the whole grace, then got a connection reset),
// and the process exits 0 well before its grace.
func TestSIGTERMAnswersWaitingClaimsAtOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	p := startServe(t, bin, filepath.Join(t.TempDir(), "ledger.db"))
	base := "http://" + p.waitAddr(t, 90*time.Second)
	var runtime string
	for deadline := time.Now().Add(20 * time.Second); runtime == ""; time.Sleep(20 * time.Millisecond) {
		runtime, _ = p.keyLine("runtime key: ")
		if time.Now().After(deadline) {
			t.Fatal("no runtime key printed")
		}
	}
	refs := `["x://sigterm"]`
	sum := sha256.Sum256([]byte(refs))
	release := fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)
	if code, _ := httpDo(t, http.MethodPut, base+"/v1/releases/rel/adapters/1.0", runtime, release); code != http.StatusCreated {
		t.Fatalf("register the release: %d", code)
	}

	type answer struct {
		code       int
		retryAfter string
		err        error
		after      time.Duration
	}
	const claims = 3
	answers := make(chan answer, claims)
	start := time.Now()
	for range claims {
		go func() {
			body := `{"holderId":"h","releaseId":"rel","adapterVersion":"1.0","modelProfileId":"m","waitSeconds":30}`
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/runs/claim", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+runtime)
			req.Header.Set("Content-Type", "application/json")
			res, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
			if err != nil {
				answers <- answer{err: err, after: time.Since(start)}
				return
			}
			res.Body.Close()
			answers <- answer{code: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), after: time.Since(start)}
		}()
	}
	time.Sleep(time.Second) // the claims are waiting for work
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range claims {
		a := <-answers
		if a.err != nil || a.code != http.StatusNoContent || a.retryAfter == "" {
			t.Fatalf("a waiting claim at SIGTERM: %d Retry-After %q, %v; want 204 with Retry-After", a.code, a.retryAfter, a.err)
		}
	}
	if d := time.Since(signalled); d > 5*time.Second {
		t.Fatalf("waiting claims answered %s after SIGTERM; the grace is 10s, want at once", d)
	}
	select {
	case <-p.exited:
	case <-time.After(8 * time.Second):
		t.Fatal("the process did not exit within 8 s of SIGTERM (its grace is 10 s)")
	}
	if p.err != nil {
		t.Fatalf("exit: %v, want 0\nstderr:\n%s", p.err, strings.Join(p.lines(false), "\n"))
	}
}

// TestGCPercentLeavesAnOperatorsGOGC: serve sets --gc-percent's GOGC unless the GOGC
// variable is set (Go has applied that one already) or the flag is 0 (Go's default).
func TestGCPercentLeavesAnOperatorsGOGC(t *testing.T) {
	t.Parallel()
	unset := func(string) (string, bool) { return "", false }
	set := func(k string) (string, bool) { return "50", k == "GOGC" }
	for _, c := range []struct {
		name    string
		flag    int
		env     func(string) (string, bool)
		want    int
		wantSet bool
	}{
		{"Default", defaultGCPercent, unset, defaultGCPercent, true},
		{"Flag", 150, unset, 150, true},
		{"ZeroIsGosDefault", 0, unset, 0, false},
		{"GOGCWins", defaultGCPercent, set, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok := gcPercent(c.flag, c.env)
			if got != c.want || ok != c.wantSet {
				t.Fatalf("gcPercent(%d) = %d, %v; want %d, %v", c.flag, got, ok, c.want, c.wantSet)
			}
		})
	}
}
