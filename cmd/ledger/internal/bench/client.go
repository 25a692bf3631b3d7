package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client speaks to one server. It is safe for concurrent use; every request is bounded by
// the request timeout.
type client struct {
	base    string
	hc      *http.Client
	timeout time.Duration
}

func newClient(base string, timeout time.Duration, conns int) *client {
	tr := &http.Transport{
		Proxy:               nil, // loopback or an explicit --url: never a proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(conns, 8),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &client{base: strings.TrimRight(base, "/"), hc: &http.Client{Transport: tr, Timeout: timeout}, timeout: timeout}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// answer is one response: its status and, for a failure, the problem code (or the name of
// a transport failure: "timeout", "transport").
type answer struct {
	status int
	code   string
	// retry says the server sent Retry-After, and retryAfter is its value.
	retry      bool
	retryAfter time.Duration
}

func (a answer) ok() bool { return a.code == "" }

// do sends one request with an optional JSON body and decodes a 2xx JSON answer into out
// (when out is not nil and the answer has a body). ctx ending is reported as the error;
// every other failure is an answer with a code.
func (c *client) do(ctx context.Context, method, path, key string, body any, out any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return answer{code: "timeout"}, nil
		}
		return answer{code: "transport"}, nil
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode}
	if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs >= 0 {
		a.retry, a.retryAfter = true, time.Duration(secs)*time.Second
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if out != nil && res.StatusCode != http.StatusNoContent {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				a.code = "bad_response"
			}
		}
		_, _ = io.Copy(io.Discard, res.Body)
		return a, nil
	}
	var p struct {
		Code string `json:"code"`
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(b, &p) == nil && p.Code != "" {
		a.code = p.Code
	} else {
		a.code = "http_" + strconv.Itoa(res.StatusCode)
	}
	return a, nil
}

// timed sends one request and records it in rec (nil: not recorded). It reports false when
// the request failed or ctx ended.
func (c *client) timed(ctx context.Context, rec *Recorder, method, path, key string, body, out any) (answer, bool) {
	start := time.Now()
	a, err := c.do(ctx, method, path, key, body, out)
	if err != nil {
		return answer{code: "cancelled"}, false
	}
	if rec != nil {
		rec.Record(time.Since(start), a.code)
	}
	return a, a.ok()
}

// routes is the set of "METHOD /path/{param}" the server documents in /openapi.json; nil
// when the server has no document (then every route is assumed served).
type routes map[string]bool

func (c *client) routes(ctx context.Context) (routes, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	a, err := c.do(ctx, http.MethodGet, "/openapi.json", "", nil, &doc)
	if err != nil {
		return nil, err
	}
	if !a.ok() || doc.Paths == nil {
		return nil, nil
	}
	r := routes{}
	for p, ops := range doc.Paths {
		for m := range ops {
			r[strings.ToUpper(m)+" "+p] = true
		}
	}
	return r, nil
}

// missing lists the routes of want the server does not serve.
func (r routes) missing(want ...string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, w := range want {
		if !r[w] {
			out = append(out, w)
		}
	}
	return out
}

// rss reads the server's resident memory from its Prometheus metrics (0 when unknown).
func (c *client) rss(ctx context.Context) float64 {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		return 0
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0
	}
	return parseRSS(res.Body)
}

// parseRSS finds process_resident_memory_bytes in Prometheus text and returns it in MiB.
func parseRSS(r io.Reader) float64 {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "process_resident_memory_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0
			}
			return round(f/(1<<20), 1)
		}
	}
	return 0
}

// waitReady polls /readyz until it answers 200, the process exits (exited is closed) or
// the timeout passes.
func (c *client) waitReady(ctx context.Context, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		a, err := c.do(ctx, http.MethodGet, "/readyz", "", nil, nil)
		if err != nil {
			return err
		}
		if a.status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server at %s not ready after %s (last answer %d %s)", c.base, timeout, a.status, a.code)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("server exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
