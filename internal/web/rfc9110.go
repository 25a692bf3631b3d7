package web

import (
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// The HTTP rules every route follows, applied here once (DESIGN.md section 7): 405 with
// Allow, HEAD wherever GET, 304 for a current If-None-Match, 415 for a body that is not
// JSON, 400 for an unknown query parameter, and the request id.

// add registers h for method and path behind mw and the route's strict checks; a GET is
// also registered for HEAD.
func (s *Server) add(method, path string, op Op, h echo.HandlerFunc, mw []echo.MiddlewareFunc) {
	// known maps the parameters the document lists for the route (those of its query struct)
	// to whether each is a list, which alone may be repeated.
	known := map[string]bool{}
	if op.Query != nil {
		fields := map[string]reflect.Value{}
		queryFields(reflect.New(reflect.TypeOf(op.Query)).Elem(), fields)
		for name, f := range fields {
			known[name] = f.Kind() == reflect.Slice
		}
	}
	body := op.Body != nil
	// A parameter without a rule is refused when the document is built (every HTTP test
	// builds it), not here: routes outside the API may be registered before their rule.
	var names []string
	for _, name := range PathParams(path) {
		if _, ok := pathParamRules[name]; ok {
			names = append(names, name)
		}
	}
	strict := func(c echo.Context) error {
		c.Set(opKey, &op)
		if err := checkQuery(c, known); err != nil {
			return err
		}
		if body {
			if err := checkMediaType(c.Request()); err != nil {
				return err
			}
		}
		switch c.Request().Method {
		case http.MethodHead:
			c.Response().Writer = bodyless{c.Response().Writer}
			notModified(c)
		case http.MethodGet:
			notModified(c)
		}
		if err := checkPath(c, names); err != nil {
			return err
		}
		return h(c)
	}
	methods := []string{method}
	if method == http.MethodGet {
		methods = append(methods, http.MethodHead)
	}
	segments := strings.Split(path, "/")
	for _, m := range methods {
		s.Echo.Add(m, path, strict, mw...)
		s.routes = append(s.routes, routeMethods{segments: segments, method: m})
	}
}

// routeMethods is one registered method of a path pattern, for Allow.
type routeMethods struct {
	segments []string
	method   string
}

// allowed lists the methods some route serves for the request path, as Echo would route
// them (a parameter matches any non-empty segment), in a fixed order.
func (s *Server) allowed(path string) []string {
	segs := strings.Split(path, "/")
	set := map[string]bool{}
	for _, r := range s.routes {
		if matchSegments(r.segments, segs) {
			set[r.method] = true
		}
	}
	order := map[string]int{http.MethodGet: 0, http.MethodHead: 1, http.MethodPost: 2, http.MethodPut: 3, http.MethodPatch: 4, http.MethodDelete: 5}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i]] < order[out[j]] })
	return out
}

func matchSegments(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		switch {
		case strings.HasPrefix(p, ":"):
			if segs[i] == "" {
				return false
			}
		case p != segs[i]:
			return false
		}
	}
	return true
}

// methodNotAllowed answers a known path asked with a method it does not serve: 405
// method_not_allowed with Allow. Echo's router marks that case (and answers OPTIONS by
// itself, which this service does not offer: its methods are those of its document).
func (s *Server) methodNotAllowed(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		routed, ok := c.Get(echo.ContextKeyHeaderAllow).(string)
		if !ok {
			return next(c)
		}
		allow := s.allowed(c.Request().URL.EscapedPath())
		if len(allow) == 0 {
			// A path registered on Echo directly (not through Route): Echo's own list,
			// without the OPTIONS it would answer itself.
			for _, m := range strings.Split(routed, ", ") {
				if m != http.MethodOptions && m != "" {
					allow = append(allow, m)
				}
			}
		}
		if len(allow) == 0 {
			return apperr.New(api.CodeNotFound, "no such route")
		}
		c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
		return apperr.New(api.CodeMethodNotAllowed, "%s is not served here; Allow lists what is", c.Request().Method)
	}
}

// checkQuery refuses query parameters the route does not declare, and declared ones given
// more than once unless they are lists: a misspelt filter (projectid) must not silently
// widen a listing. A query
// string Go cannot parse whole (a bad escape, past its limit on the number of parameters)
// is refused too: Echo's QueryParams drops what it cannot parse, filters included.
func checkQuery(c echo.Context, known map[string]bool) error {
	if _, err := url.ParseQuery(c.Request().URL.RawQuery); err != nil {
		return apperr.New(api.CodeInvalidRequest, "the query string cannot be parsed: %s", queryParseReason(err))
	}
	var bad []api.FieldError
	q := c.QueryParams()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		list, ok := known[name]
		switch {
		case !ok:
			bad = append(bad, api.FieldError{Field: name, Reason: "is not a query parameter of this route"})
		case len(q[name]) > 1 && !list:
			bad = append(bad, api.FieldError{Field: name, Reason: "is given more than once"})
		}
	}
	if len(bad) > 0 {
		return apperr.FieldsInvalid(bad...)
	}
	return nil
}

// queryParseReason says why url.ParseQuery refused a query string, without echoing it (the
// error quotes the bad part, which may be long).
func queryParseReason(err error) string {
	if strings.Contains(err.Error(), "number of") {
		return "too many parameters"
	}
	return "a parameter is not a valid URL-encoded pair (bad % escape or ';')"
}

// checkMediaType refuses a request body that is not JSON with 415. A Content-Type, when
// sent, must be application/json or application/*+json (charset utf-8 if any); a body
// without one is refused too. A request with neither body nor Content-Type passes: its
// route answers an empty body (400 where the body is required, {} where it is optional).
func checkMediaType(r *http.Request) error {
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" {
		if r.ContentLength == 0 {
			return nil
		}
		return apperr.New(api.CodeUnsupportedMediaType, "a request body must be sent as application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && isJSON(mt) {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
		return apperr.New(api.CodeUnsupportedMediaType, "JSON bodies are UTF-8: charset %q is not served", params["charset"])
	}
	return apperr.New(api.CodeUnsupportedMediaType, "the request body must be application/json (or application/*+json), not %q", ct)
}

func isJSON(mt string) bool {
	if mt == "application/json" {
		return true
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && strings.HasSuffix(sub, "+json") && len(sub) > len("+json")
}

// requestIDPattern is what a client's X-Request-Id may be to be kept: it reaches logs and
// problem documents verbatim, so nothing that could forge a log line or a header.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// keepRequestID keeps a client's X-Request-Id when it matches requestIDPattern and makes a
// fresh one otherwise; the response, the problem's instance and the log carry it.
func keepRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !requestIDPattern.MatchString(id) {
			id = uuid.NewString()
			req.Header.Set(echo.HeaderXRequestID, id)
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}
