package web

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// ConnLimits caps the connections a replica holds open (DESIGN.md section 6): each one is a
// file descriptor, and a client holding thousands of slow connections must not run the
// process out of them. A zero field is no cap.
type ConnLimits struct {
	// Total caps the connections open at once, all clients together.
	Total int
	// PerAddr caps the connections open at once from one client address (its IP; an IPv6
	// client's /64). Connections from a trusted proxy are not capped per address: the proxy
	// carries every client's.
	PerAddr int
}

// limitListener accepts connections up to its limits: one past a limit is closed at once
// (the client sees the connection reset, and the process never holds it). A transient
// accept error (out of file descriptors, a connection aborted before it was accepted) is
// logged and waited out, never returned: returning it would stop http.Server's loop for
// good on an error that is not temporary in Go's sense.
type limitListener struct {
	net.Listener
	limits  ConnLimits
	trusted []*net.IPNet
	log     *slog.Logger

	mu     sync.Mutex
	total  int
	byAddr map[string]int
	// lastLog is when a refused connection or a transient error was last logged.
	lastLog time.Time
}

func newLimitListener(ln net.Listener, l ConnLimits, trusted []*net.IPNet, log *slog.Logger) net.Listener {
	return &limitListener{Listener: ln, limits: l, trusted: trusted, log: log, byAddr: map[string]int{}}
}

// Accept returns the next connection within the limits.
func (l *limitListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			// Any error but a closed listener is waited out: Go's net.Error.Temporary covers
			// EMFILE and ECONNABORTED, but not the network errors Linux passes on from a
			// connection that failed before it was accepted (EPROTO, ENETUNREACH, …), which
			// would stop http.Server's loop, and the process would serve nothing again.
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			l.warn("accept failed; retrying", "err", err, "retry_in", backoff.String())
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if key, ok := l.take(c.RemoteAddr()); ok {
			return &limitConn{Conn: c, l: l, key: key}, nil
		}
		l.warn("connection refused: at the connection limit", "remote", c.RemoteAddr().String(),
			"max_conns", l.limits.Total, "max_conns_per_addr", l.limits.PerAddr)
		_ = c.Close()
	}
}

// warn logs at most once a second, so a flood of refused connections is one line a second.
func (l *limitListener) warn(msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	quiet := now.Sub(l.lastLog) < time.Second
	if !quiet {
		l.lastLog = now
	}
	l.mu.Unlock()
	if !quiet {
		l.log.Warn(msg, args...)
	}
}

// take counts a new connection from addr, or reports false past a limit. key is what its
// close gives back ("" when not counted per address).
func (l *limitListener) take(addr net.Addr) (key string, ok bool) {
	ip := ""
	if ta, isTCP := addr.(*net.TCPAddr); isTCP {
		ip = connKey(ta.IP, l.trusted)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Total > 0 && l.total >= l.limits.Total {
		return "", false
	}
	if ip != "" && l.limits.PerAddr > 0 {
		if l.byAddr[ip] >= l.limits.PerAddr {
			return "", false
		}
		l.byAddr[ip]++
	} else {
		ip = ""
	}
	l.total++
	return ip, true
}

func (l *limitListener) give(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if key == "" {
		return
	}
	if l.byAddr[key] <= 1 {
		delete(l.byAddr, key)
		return
	}
	l.byAddr[key]--
}

// connKey is the per-address key of a peer: its IP (an IPv6 one's /64), or "" for a trusted
// proxy, which is not capped per address.
func connKey(ip net.IP, trusted []*net.IPNet) string {
	for _, n := range trusted {
		if n.Contains(ip) {
			return ""
		}
	}
	if ip.To4() != nil {
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// limitConn gives its place back once, when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.give(c.key) })
	return err
}
