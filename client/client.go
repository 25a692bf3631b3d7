package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// DefaultBaseURL is where a Client sends requests unless WithBaseURL says otherwise: a
// `ledger serve` on this machine with its default address.
const DefaultBaseURL = "http://localhost:8080"

// DefaultUserAgent is the User-Agent a Client sends unless WithUserAgent says otherwise.
const DefaultUserAgent = "ledger-go-client/1"

// maxErrorBody bounds how much of an error answer is read: a problem document is small, and
// a proxy's HTML page need not be read whole.
const maxErrorBody = 64 << 10

// Client calls the ledger service. It is safe for concurrent use; make one per service and
// key and share it.
type Client struct {
	base  *url.URL
	key   string
	hc    *http.Client
	ua    string
	retry RetryPolicy
	// pollMin and pollMax bound the pauses between the waiting reads of WaitDecision and
	// WaitDelegation that the server answered early.
	pollMin, pollMax time.Duration
	// sleep waits d or until ctx ends; tests replace it to observe the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client) error

// WithBaseURL sets the service's base URL (scheme, host and an optional path prefix), e.g.
// https://ledger.example.com. The default is DefaultBaseURL.
func WithBaseURL(raw string) Option {
	return func(c *Client) error {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("base URL: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("base URL %q: want http(s)://host[:port][/prefix]", raw)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawQuery, u.Fragment = "", ""
		c.base = u
		return nil
	}
}

// WithKey sets the API key sent as `Authorization: Bearer <key>`. The key decides the
// tenant and the role (runtime or admin).
func WithKey(key string) Option {
	return func(c *Client) error { c.key = key; return nil }
}

// WithHTTPClient sets the *http.Client requests go through (its Transport, proxy, TLS
// settings and Timeout). Do not give it a Timeout shorter than a claim's long poll
// (waitSeconds); bound calls with their context instead. The default is a client of its own
// with no timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("nil *http.Client")
		}
		c.hc = hc
		return nil
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *Client) error { c.ua = ua; return nil }
}

// WithRetry sets how calls are retried (see RetryPolicy); RetryPolicy{MaxAttempts: 1}
// turns retries off.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) error { c.retry = p.withDefaults(); return nil }
}

// WithPolling sets the pauses of WaitDecision and WaitDelegation between waiting reads the
// server answered early and unfinished (its tenant's waiting reads at their cap, or a
// delegation following a continuation): the first is about least, each next one doubles,
// up to greatest (defaults 250ms and 5s).
func WithPolling(least, greatest time.Duration) Option {
	return func(c *Client) error {
		if least <= 0 || greatest < least {
			return fmt.Errorf("polling: want 0 < least <= greatest, got %s and %s", least, greatest)
		}
		c.pollMin, c.pollMax = least, greatest
		return nil
	}
}

// New returns a Client configured by opts.
func New(opts ...Option) (*Client, error) {
	c := &Client{
		hc:    &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		ua:    DefaultUserAgent,
		retry: RetryPolicy{}.withDefaults(),
		sleep: sleepCtx,

		pollMin: 250 * time.Millisecond,
		pollMax: 5 * time.Second,
	}
	if err := WithBaseURL(DefaultBaseURL)(c); err != nil {
		return nil, err
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, fmt.Errorf("ledger client: %w", err)
		}
	}
	return c, nil
}

// repeat says whether a call may be sent again after a try that may have reached the
// server. Every call may be sent again after a 429 (the server refused it before doing
// anything) or when the connection could not be made (nothing was sent).
type repeat int

const (
	// once: not safe to repeat (a claim, a decision request, an enqueue without an
	// idempotency key, a correction): never sent again once it may have reached the server.
	once repeat = iota
	// idempotent: an exact repeat answers as the first try did, or changes nothing more
	// (reads, fenced writes with a sequence or an exact-repeat rule, idempotency keys).
	idempotent
	// conditional: an If-Match update. A repeat of one that applied is refused (412 or the
	// call's closed code), which Client reports with ErrMaybeApplied.
	conditional
)

// repeats are the repeat classes by their names in api/retry.json.
var repeats = map[string]repeat{"once": once, "idempotent": idempotent, "conditional": conditional}

// call is one API call.
type call struct {
	// op is the operationId: its row of the operation table (api.Endpoints, generated from
	// the routes and api/retry.json) gives the method, the path template that params fill
	// in order, the repeat class and its rules.
	op     string
	params []string
	query  url.Values
	body   any
	// ifMatch and ifNoneMatch are sent as headers when not empty.
	ifMatch, ifNoneMatch string
	// out receives a 2xx body (nil: discarded).
	out any

	// Set by do from op's row.
	method, path string
	repeat       repeat
	ambiguous    []api.ProblemCode
}

// resolve sets rq's method, path and repeat class from its operation's row of the table,
// given the encoded body.
func (rq *call) resolve(body []byte) error {
	e, ok := api.EndpointOf(rq.op)
	if !ok {
		return fmt.Errorf("ledger: %s is no operation of the service", rq.op)
	}
	rq.method, rq.ambiguous = e.Method, e.Ambiguous
	names := e.PathParams()
	if len(names) != len(rq.params) {
		return fmt.Errorf("ledger: %s (%s %s) takes %d path parameters, given %d", rq.op, e.Method, e.Path, len(names), len(rq.params))
	}
	for i, v := range rq.params {
		// As the other SDKs do: an empty segment would name another route, or none.
		if v == "" {
			return fmt.Errorf("ledger: %s: %s is required", rq.op, names[i])
		}
	}
	rq.path = e.ExpandPath(func(i int) string { return seg(rq.params[i]) })
	cls := e.Repeat
	if len(e.WhenBody) > 0 && body != nil {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("ledger: %s: %w", rq.op, err)
		}
		for member, c := range e.WhenBody {
			if present(v, member) {
				cls = c
			}
		}
	}
	if rq.ifMatch != "" && e.WhenIfMatch != "" {
		cls = e.WhenIfMatch
	}
	r, ok := repeats[cls]
	if !ok {
		return fmt.Errorf("ledger: %s: unknown repeat class %q", rq.op, cls)
	}
	rq.repeat = r
	return nil
}

// present says whether the dotted member of a JSON value is there and not null, false or
// empty (api/retry.json's whenBody rule).
func present(v any, dotted string) bool {
	for _, part := range strings.Split(dotted, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		v = m[part]
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// result is what a call's answer says beyond its body.
type result struct {
	status int
	header http.Header
}

// etag is the answer's ETag header.
func (r result) etag() string { return r.header.Get("ETag") }

// do sends rq, retrying as its repeat class and the policy allow, and decodes a 2xx answer
// into rq.out or a problem into a *Problem error.
func (c *Client) do(ctx context.Context, rq call) (result, error) {
	var body []byte
	if rq.body != nil {
		b, err := json.Marshal(rq.body)
		if err != nil {
			return result{}, fmt.Errorf("ledger: encode %s: %w", rq.op, err)
		}
		body = b
	}
	if err := rq.resolve(body); err != nil {
		return result{}, err
	}
	// rq.path is already escaped (each segment through seg), so it is appended as text.
	target := c.base.String() + rq.path
	if len(rq.query) > 0 {
		target += "?" + rq.query.Encode()
	}

	var mayHaveApplied bool // an earlier try may have reached the server and applied
	for try := 1; ; try++ {
		res, sent, err := c.try(ctx, rq, target, body)
		if err == nil {
			return res, nil
		}
		var p *Problem
		isProblem := errors.As(err, &p)
		if isProblem && rq.repeat == conditional && mayHaveApplied && contains(rq.ambiguous, p.Code) {
			return res, fmt.Errorf("%w: %w", ErrMaybeApplied, err)
		}
		retry, wait := c.retryable(rq.repeat, err, sent)
		if !retry || try >= c.retry.MaxAttempts || wait > c.retry.MaxRetryAfter || ctx.Err() != nil {
			return res, err
		}
		if sent && (!isProblem || p.Status != http.StatusTooManyRequests) {
			mayHaveApplied = true
		}
		d := c.retry.backoff(try, wait)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			// Waiting past the caller's deadline only to fail then helps nobody.
			return res, err
		}
		if serr := c.sleep(ctx, d); serr != nil {
			return res, fmt.Errorf("%w (retry abandoned: %w)", err, serr)
		}
	}
}

// try sends one try. sent reports whether the request may have reached the server.
func (c *Client) try(ctx context.Context, rq call, target string, body []byte) (res result, sent bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, target, rd)
	if err != nil {
		return result{}, false, fmt.Errorf("ledger: %s %s: %w", rq.method, rq.path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", c.ua)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if rq.ifMatch != "" {
		req.Header.Set("If-Match", rq.ifMatch)
	}
	if rq.ifNoneMatch != "" {
		req.Header.Set("If-None-Match", rq.ifNoneMatch)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return result{}, !notSent(err), &TransportError{Method: rq.method, Path: rq.path, Err: err}
	}
	defer resp.Body.Close()
	res = result{status: resp.StatusCode, header: resp.Header}
	switch {
	case resp.StatusCode == http.StatusNotModified, resp.StatusCode == http.StatusNoContent:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return res, true, nil
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if rq.out == nil || rq.method == http.MethodHead {
			_, _ = io.Copy(io.Discard, resp.Body)
			return res, true, nil
		}
		if err := json.NewDecoder(resp.Body).Decode(rq.out); err != nil {
			return res, true, &TransportError{Method: rq.method, Path: rq.path, Status: resp.StatusCode, Err: fmt.Errorf("decode answer: %w", err)}
		}
		// Read to the end (a chunked answer's last chunk) so that the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return res, true, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return res, true, problemOf(rq.method, rq.path, resp, b)
}

// retryable says whether a failed try may be sent again, and the wait the server asked for.
func (c *Client) retryable(r repeat, err error, sent bool) (bool, time.Duration) {
	var p *Problem
	if errors.As(err, &p) {
		switch p.Status {
		case http.StatusTooManyRequests:
			// The limiters answer before any handler runs: nothing was done.
			return true, p.RetryAfter
		case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			return r != once, p.RetryAfter
		}
		return false, 0
	}
	var te *TransportError
	if !errors.As(err, &te) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, 0
	}
	if te.Status != 0 {
		// The server answered; its answer could not be read. Sending again would repeat
		// whatever the server did.
		return r != once, 0
	}
	return !sent || r != once, 0
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
