// Package serveproc runs `ledger serve` as a child process for the tools and tests that
// need a real server: it finds the listening address in the JSON log, reads the bootstrap
// keys a new database prints, waits for /readyz, and stops the process by SIGTERM or SIGKILL.
package serveproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is one running `ledger serve` process.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	// Keys are the bootstrap keys printed on a new database (empty otherwise).
	Keys   Keys
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	tail   *tailBuffer
}

// Keys are a tenant's admin and runtime keys.
type Keys struct{ Admin, Runtime string }

// Start runs `bin serve` on 127.0.0.1 with a free port on the SQLite file db, with the extra
// flags args, and waits up to timeout until it answers /readyz.
func Start(ctx context.Context, bin, db string, timeout time.Duration, args ...string) (*Server, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "info"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, exited: make(chan struct{}), tail: &tailBuffer{max: 4 << 10}}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	keysc := make(chan Keys, 1)
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
		s.Kill()
		return nil, fmt.Errorf("server did not listen within %s: %s", timeout, s.tail.lastLines(5))
	case <-ctx.Done():
		s.Kill()
		return nil, ctx.Err()
	}
	s.URL = "http://" + addr
	if err := s.waitReady(ctx, timeout); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%w: %s", err, s.tail.lastLines(5))
	}
	// The keys are printed before the server listens, so they are in by now when printed.
	select {
	case s.Keys = <-keysc:
	case <-time.After(100 * time.Millisecond):
	}
	return s, nil
}

// readKeys reads "admin key: …" and "runtime key: …" from the server's stdout.
func readKeys(r io.Reader, out chan<- Keys) {
	sc := bufio.NewScanner(r)
	var k Keys
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "admin key: "); ok {
			k.Admin = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "runtime key: "); ok {
			k.Runtime = strings.TrimSpace(v)
		}
		if !sent && k.Admin != "" && k.Runtime != "" {
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

// Stop sends SIGTERM and waits for the process to drain and exit, killing it after grace.
func (s *Server) Stop(grace time.Duration) error {
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
		s.Kill()
		return fmt.Errorf("server did not stop within %s of SIGTERM; killed", grace)
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
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

// waitReady polls /readyz until it answers 200, the process exits, or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		if res, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = res.Status
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server at %s not ready after %s (last answer: %s)", s.URL, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.exited:
			return errors.New("server exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
