package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// serveOn serves s on a loopback listener until the test ends and returns its address.
func serveOn(t *testing.T, s *Server, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 2*time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// dialFrom opens a connection to addr from the loopback address from and proves it is
// served (a keep-alive /healthz answered 200), or reports the error that ended it.
func dialFrom(addr, from string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		c.Close()
		return nil, errors.New(res.Status)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// TestConnectionsCappedPerAddressAndInTotal is issue 17 item 9 with real sockets on
// loopback: past the per-address cap a client's next connection is closed at once while
// other addresses are served; past the total cap every new connection is; a closed one
// gives its place back.
func TestConnectionsCappedPerAddressAndInTotal(t *testing.T) {
	t.Parallel()
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Conns: ConnLimits{Total: 4, PerAddr: 2}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, s, ln)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	open := func(from string) {
		t.Helper()
		c, err := dialFrom(addr, from)
		if err != nil {
			t.Fatalf("a connection from %s within the caps: %v", from, err)
		}
		held = append(held, c)
	}
	refused := func(what, from string) {
		t.Helper()
		if c, err := dialFrom(addr, from); err == nil {
			c.Close()
			t.Fatalf("%s from %s was served", what, from)
		}
	}
	open("127.0.0.1")
	open("127.0.0.1")
	refused("a third connection of one address", "127.0.0.1")
	open("127.0.0.2")
	open("127.0.0.3")
	refused("a connection past the total cap", "127.0.0.4")

	held[0].Close()
	held = held[1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := dialFrom(addr, "127.0.0.1")
		if err == nil {
			held = append(held, c)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection did not give its place back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flakyListener fails its first accepts with errors Linux passes on from connections that
// failed before they were accepted, which Go does not call temporary.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		errs := []error{syscall.EPROTO, syscall.ENETUNREACH, syscall.EMFILE}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errs[int(l.fails.Load())%len(errs)])}
	}
	return l.Listener.Accept()
}

// TestTransientAcceptErrorNeverStopsTheListener: accept errors other than a closed listener
// are waited out; the server goes on serving (before, EPROTO ended http.Server's loop and
// the process served nothing again).
func TestTransientAcceptErrorNeverStopsTheListener(t *testing.T) {
	t.Parallel()
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: inner}
	ln.fails.Store(3)
	addr := serveOn(t, s, ln)
	c, err := dialFrom(addr, "127.0.0.1")
	if err != nil {
		t.Fatalf("after transient accept errors: %v", err)
	}
	c.Close()
}
