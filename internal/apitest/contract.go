package apitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"

	"github.com/ledger-dev/ledger/internal/web"
	"github.com/ledger-dev/ledger/internal/web/openapi"
)

// Contract checks exchanges against a server's own OpenAPI document (DESIGN.md section 7:
// the document is the exact wire). A request the document refuses must be refused (a 4xx);
// every answer to a documented operation must be one the document declares: its status,
// every header beyond the transport's, its body's members, types, formats and enum values.
type Contract struct {
	v validator.Validator
	// codes are the problem codes each operation lists, by path template, method and status.
	codes map[string]map[string]map[string][]string
}

// transportHeaders are the headers the document does not declare: HTTP's own, the key, and
// the request id a client may send. Any other header sent in either direction must be
// declared on its operation or response.
var transportHeaders = []string{
	"content-type", "content-length", "date", "connection", "transfer-encoding", "accept", "accept-encoding",
	"user-agent", "host", "authorization", "x-request-id",
}

var contracts sync.Map // sha256 of the document -> *contractOnce

type contractOnce struct {
	once sync.Once
	c    *Contract
	err  error
}

// ContractOf returns the checker of a server's document (built once per document).
func ContractOf(s *web.Server) (*Contract, error) {
	doc, err := json.Marshal(openapi.Document(s))
	if err != nil {
		return nil, err
	}
	return ContractOfDocument(doc)
}

// ContractOfDocument returns the checker of an OpenAPI document (built once per document).
func ContractOfDocument(doc []byte) (*Contract, error) {
	key := sha256.Sum256(doc)
	e, _ := contracts.LoadOrStore(key, &contractOnce{})
	co := e.(*contractOnce)
	co.once.Do(func() {
		d, err := libopenapi.NewDocument(doc)
		if err != nil {
			co.err = fmt.Errorf("parse the OpenAPI document: %w", err)
			return
		}
		// Strict mode refuses undeclared headers and query parameters; bodies need none of it,
		// since every object schema of the document already refuses undeclared members
		// (additionalProperties: false), and the document's own body is a free object.
		v, errs := validator.NewValidator(d, config.WithStrictMode(), config.WithStrictIgnoredHeaders(transportHeaders...),
			config.WithStrictIgnorePaths("$.body", "$.body.**"),
			config.WithFormatAssertions(), config.WithContentAssertions())
		if len(errs) > 0 {
			co.err = fmt.Errorf("build the validator: %v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			co.err = fmt.Errorf("the OpenAPI document is not valid OpenAPI: %s", describe(verrs))
			return
		}
		var parsed struct {
			Paths map[string]map[string]struct {
				Responses map[string]struct {
					Codes []string `json:"x-problem-codes"`
				} `json:"responses"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(doc, &parsed); err != nil {
			co.err = err
			return
		}
		codes := map[string]map[string]map[string][]string{}
		for path, ops := range parsed.Paths {
			codes[path] = map[string]map[string][]string{}
			for method, op := range ops {
				codes[path][strings.ToUpper(method)] = map[string][]string{}
				for st, r := range op.Responses {
					codes[path][strings.ToUpper(method)][st] = r.Codes
				}
			}
		}
		co.c = &Contract{v: v, codes: codes}
	})
	return co.c, co.err
}

// Check returns why an exchange breaks the contract, or "" when it keeps it. body is the
// request's body (req.Body is not read).
func (c *Contract) Check(req *http.Request, body []byte, status int, header http.Header, respBody []byte) string {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	reqOK, reqErrs := c.v.ValidateHttpRequestSync(r)
	if !reqOK && unrouted(reqErrs) {
		// No documented operation: the server must refuse it with a problem (404 or 405, or
		// whatever a route that matches the path by pattern answers first: GET
		// /v1/runs/claim is getRun's path to the router, and its key or id are refused).
		if status < 400 || status >= 500 || !strings.HasPrefix(header.Get("Content-Type"), "application/problem+json") {
			return fmt.Sprintf("a request to no documented operation (%s) was answered %d %s", describe(reqErrs), status, header.Get("Content-Type"))
		}
		if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
			return "a 405 without Allow"
		}
		return ""
	}
	var problems []string
	if !reqOK && (status < 400 || status >= 500) {
		problems = append(problems, fmt.Sprintf("the document refuses the request (%s) but the server answered %d", describe(reqErrs), status))
	}
	res := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(respBody)),
		ContentLength: int64(len(respBody)), Request: r}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := c.v.ValidateHttpResponse(r, res); !ok {
		problems = append(problems, "the document refuses the response: "+describe(errs))
	}
	if msg := c.checkCode(r, status, header, respBody); msg != "" {
		problems = append(problems, msg)
	}
	return strings.Join(problems, "; ")
}

// checkCode holds a problem's code to the codes its operation lists for its status.
func (c *Contract) checkCode(r *http.Request, status int, header http.Header, body []byte) string {
	if status < 400 || len(body) == 0 || !strings.HasPrefix(header.Get("Content-Type"), "application/problem+json") {
		return ""
	}
	var p struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
		Type   string `json:"type"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return "" // the schema check has said why
	}
	if p.Status != status || p.Type != "urn:ledger:problem:"+p.Code {
		return fmt.Sprintf("problem status %d and type %q do not match the answer's %d and its code %q", p.Status, p.Type, status, p.Code)
	}
	tmpl := c.template(r.URL.EscapedPath())
	listed, ok := c.codes[tmpl][r.Method][strconv.Itoa(status)]
	if !ok {
		return "" // an undeclared status: the schema check has said so
	}
	if !slices.Contains(listed, p.Code) {
		return fmt.Sprintf("problem code %q is not one the operation lists for %d: %v", p.Code, status, listed)
	}
	return ""
}

// template is the document's path that routes path, a concrete segment before a parameter.
func (c *Contract) template(path string) string {
	segs := strings.Split(path, "/")
	best, bestScore := "", -1
	for tmpl := range c.codes {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		score := 0
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{"):
				if segs[i] == "" {
					score = -1
				}
			case t == segs[i]:
				score++
			default:
				score = -1
			}
			if score < 0 {
				break
			}
		}
		if score > bestScore {
			best, bestScore = tmpl, score
		}
	}
	return best
}

// unrouted reports whether the validator found no operation for the request.
func unrouted(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType == helpers.PathValidation &&
			(e.ValidationSubType == helpers.ValidationMissing || e.ValidationSubType == helpers.ValidationMissingOperation) {
			return true
		}
	}
	return false
}

func describe(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			s += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			loc := f.FieldPath
			if loc == "" {
				loc = f.KeywordLocation
			}
			s += fmt.Sprintf(" [%s: %s]", loc, f.Reason)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Checked wraps the server's handler so that every request it serves, and every answer it
// gives, is checked against its document; a breach fails t with the route, the status and
// the validator's words. Stacks serve through it, so every HTTP test is covered.
func Checked(t testing.TB, s *web.Server) http.Handler {
	t.Helper()
	c, err := ContractOf(s)
	if err != nil {
		t.Fatalf("OpenAPI contract: %v", err)
	}
	return c.Handler(t, s.Echo)
}

// Handler wraps next so that every exchange is checked. The request's body is checked as
// far as the server read it (a server that refuses a body too large stops reading).
// Breaches fail t at once, or, for a fuzz test's *testing.F (which must not fail inside
// its fuzz function), when it cleans up.
func (c *Contract) Handler(t testing.TB, next http.Handler) http.Handler {
	report := func(msg string) { t.Errorf("%s", msg) }
	if _, fuzz := t.(*testing.F); fuzz {
		var (
			mu       sync.Mutex
			breaches []string
		)
		report = func(msg string) { mu.Lock(); breaches = append(breaches, msg); mu.Unlock() }
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			for _, b := range breaches {
				t.Errorf("%s", b)
			}
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/") {
			// The admin console: HTML pages for people, not part of the API's document.
			next.ServeHTTP(w, r)
			return
		}
		var body bytes.Buffer
		// A copy of the request: the server must still see its own body type on the original
		// (it decides by it how to finish a request whose body was not read).
		served := r.WithContext(r.Context())
		served.Body = teeBody{ReadCloser: r.Body, copy: &body}
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, served)
		if msg := c.Check(r, body.Bytes(), rec.status, w.Header().Clone(), rec.body.Bytes()); msg != "" {
			report(fmt.Sprintf("OpenAPI contract: %s %s -> %d: %s", r.Method, r.URL.RequestURI(), rec.status, msg))
		}
	})
}

// teeBody keeps a copy of what is read of a request body.
type teeBody struct {
	io.ReadCloser
	copy *bytes.Buffer
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.copy.Write(p[:n])
	return n, err
}

// teeWriter writes through and keeps a copy of the status and body.
type teeWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *teeWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Flush lets streaming handlers flush through the wrapper.
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
