package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one `ledger serve` process.
type server struct {
	cmd   *exec.Cmd
	addr  chan string
	keys  chan [2]string
	exit  chan error
	mu    sync.Mutex
	tail  []string
	admin string
}

// start runs `ledger serve` on db with extra flags; it returns once the server answers
// /readyz. On a new database the bootstrap keys are read from its output.
func start(ctx context.Context, bin, db string, extra ...string) (*server, string, [2]string, error) {
	// Info level: the listening address is logged there.
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "info",
		"--rate-limit", "0", "--max-inflight", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", [2]string{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", [2]string{}, err
	}
	s := &server{cmd: cmd, addr: make(chan string, 1), keys: make(chan [2]string, 1), exit: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		return nil, "", [2]string{}, fmt.Errorf("start server: %w", err)
	}
	go s.readKeys(stdout)
	go s.readLog(stderr)
	go func() { s.exit <- cmd.Wait() }()
	var addr string
	select {
	case addr = <-s.addr:
	case err := <-s.exit:
		return nil, "", [2]string{}, fmt.Errorf("server exited before listening: %v; log: %s", err, s.lastLog())
	case <-time.After(60 * time.Second):
		s.kill()
		return nil, "", [2]string{}, fmt.Errorf("server did not listen in time; log: %s", s.lastLog())
	case <-ctx.Done():
		s.kill()
		return nil, "", [2]string{}, ctx.Err()
	}
	url := "http://" + addr
	if err := waitReady(ctx, url); err != nil {
		s.kill()
		return nil, "", [2]string{}, err
	}
	var keys [2]string
	select {
	case keys = <-s.keys:
	default:
	}
	return s, url, keys, nil
}

func (s *server) readKeys(r io.Reader) {
	sc := bufio.NewScanner(r)
	var k [2]string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "admin key: "); ok {
			k[0] = v
		}
		if v, ok := strings.CutPrefix(line, "runtime key: "); ok {
			k[1] = v
			s.keys <- k
		}
	}
}

func (s *server) readLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.tail = append(s.tail, line)
		if len(s.tail) > 20 {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if !sent && json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" {
			s.addr <- entry.Addr
			sent = true
		}
	}
}

func (s *server) lastLog() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.exit:
	case <-time.After(10 * time.Second):
	}
}

// stop asks the process to shut down gracefully.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exit:
		return err
	case <-time.After(30 * time.Second):
		s.kill()
		return fmt.Errorf("server did not stop on SIGTERM")
	}
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/readyz", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("server at %s never became ready", url)
}
