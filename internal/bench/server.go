package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one `ledger serve` subprocess on a loopback port.
type server struct {
	cmd    *exec.Cmd
	url    string
	keys   keys
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	tail   *tailBuffer
}

// keys are a tenant's admin and runtime keys.
type keys struct{ admin, runtime string }

// startServer runs bin serve on the SQLite file db with durability sync and waits until it
// answers /readyz. On a new database the bootstrap keys it prints are returned in keys.
func startServer(ctx context.Context, bin, db, syncMode string, timeout time.Duration) (*server, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--sqlite-sync", syncMode,
		"--rate-limit", "0", "--max-inflight", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), tail: &tailBuffer{max: 4 << 10}}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	keysc := make(chan keys, 1)
	addrc := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); readKeys(stdout, keysc) }()
	go func() { defer readers.Done(); readLog(stderr, addrc, s.tail) }()
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		s.err = cmd.Wait()
		close(s.exited)
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-s.exited:
		return nil, fmt.Errorf("server exited before listening (%v): %s", s.err, s.tail.lastLines(5))
	case <-time.After(timeout):
		s.kill()
		return nil, fmt.Errorf("server did not listen within %s: %s", timeout, s.tail.lastLines(5))
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
	s.url = "http://" + addr
	c := newClient(s.url, 5*time.Second, 1)
	defer c.close()
	if err := c.waitReady(ctx, timeout, s.exited); err != nil {
		s.kill()
		return nil, fmt.Errorf("%w: %s", err, s.tail.lastLines(5))
	}
	// The keys are printed before the server listens, so they are in by now when printed.
	select {
	case s.keys = <-keysc:
	case <-time.After(100 * time.Millisecond):
	}
	return s, nil
}

// readKeys reads "admin key: …" and "runtime key: …" from the server's stdout.
func readKeys(r io.Reader, out chan<- keys) {
	sc := bufio.NewScanner(r)
	var k keys
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "admin key: "); ok {
			k.admin = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "runtime key: "); ok {
			k.runtime = strings.TrimSpace(v)
		}
		if !sent && k.admin != "" && k.runtime != "" {
			out <- k
			sent = true
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// readLog finds the "listening" line in the server's JSON log, then keeps only the log's
// tail (the server logs one line per request; parsing them all would cost the bench CPU).
func readLog(r io.Reader, addr chan<- string, tail *tailBuffer) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		_, _ = tail.Write([]byte(line))
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" && entry.Addr != "" {
			addr <- entry.Addr
			break
		}
		if err != nil {
			return
		}
	}
	_, _ = io.Copy(tail, br)
}

// stop sends SIGTERM and waits for the process to drain and exit, killing it after grace.
func (s *server) stop(grace time.Duration) error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		var ee *exec.ExitError
		if s.err != nil && !errors.As(s.err, &ee) {
			return s.err
		}
		if s.err != nil {
			return fmt.Errorf("server exited with %v: %s", s.err, s.tail.lastLines(3))
		}
		return nil
	case <-time.After(grace):
		s.kill()
		return fmt.Errorf("server did not stop within %s of SIGTERM; killed", grace)
	}
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLines returns the last n complete lines, joined by " | ".
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
