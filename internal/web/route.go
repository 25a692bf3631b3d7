package web

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/ifmatch"
)

// The route catalogue: every route is registered with its Op, which both the authorisation
// here and the OpenAPI document (package openapi) read.

// Op documents a route, and its Roles are also what the route enforces: the document and
// the authorisation cannot drift apart. Its types are the api package's, the same the
// handler binds and sends, so the document describes what the handler does.
type Op struct {
	// ID is the operationId, read as a method name (enqueueRun, claimRun, …).
	ID string
	// Tag is the resource the route belongs to (Runs, Attempts, …).
	Tag         string
	Summary     string
	Description string
	// Public routes need no key. Otherwise Roles lists the roles allowed (empty: any role).
	Public bool
	Roles  []string
	// Body is the request body's type (an api struct value), nil for none; Example a value
	// of it shown in the document.
	Body    any
	Example any
	// BodyOptional allows an empty body.
	BodyOptional bool
	// Query is the query parameters' struct (an api …Params value), nil for none.
	Query any
	// Status is the success status; Response its body's type (nil for none).
	Status int
	// AlsoStatus lists further success statuses answered with the same body, such as the
	// 201 of a PUT that creates (with Location) beside the 200 of one that updates; a 204
	// in it has no body.
	AlsoStatus []int
	Response   any
	// RawResponse is the content type of a body the schema does not describe.
	RawResponse string
	// ETag says the success responses with a body carry an ETag; IfMatch whether the
	// request takes one and when it must (web.IfMatch, the document and the store's
	// ifmatch.Update all read this one declaration).
	ETag    bool
	IfMatch ifmatch.Mode
	// RetryAfter says a 204 of this route may carry Retry-After (the claim's budget hold).
	RetryAfter bool
	// Headers are further headers the success response may carry, by name, with what they say.
	Headers map[string]string
	// RequestHeaders are optional request headers the route reads, by name, with what they say.
	RequestHeaders map[string]string
	// Problems lists the codes this route can answer besides the ones every route of its
	// kind can (413 on every route; 401, 403, 429, 500 and 503 with a key; 400 with
	// parameters or a body; 412 and 428 as IfMatch says, never listed here).
	Problems []api.ProblemCode
}

// Operation is one documented route: what package openapi builds the document from.
type Operation struct {
	Method, Path string
	Op           Op
}

// Authenticator returns the middleware that admits a request to a route with these roles.
type Authenticator func(roles ...string) echo.MiddlewareFunc

// SetAuth is called by the wiring code before routes with roles are added.
func (s *Server) SetAuth(a Authenticator) { s.auth = a }

// Route registers a handler and its documentation. Non-public routes get the authenticator;
// a GET also answers HEAD.
func (s *Server) Route(method, path string, op Op, h echo.HandlerFunc) {
	if op.ID == "" || op.Tag == "" || op.Summary == "" {
		panic("web: route " + method + " " + path + " needs an ID, a Tag and a Summary")
	}
	if slices.Contains(op.Problems, api.CodePreconditionFailed) || slices.Contains(op.Problems, api.CodePreconditionRequired) {
		panic("web: route " + method + " " + path + " lists 412 or 428 in Problems: its IfMatch mode says when they occur")
	}
	var mw []echo.MiddlewareFunc
	if !op.Public {
		if s.auth == nil {
			panic("web: route " + path + " needs authentication but no authenticator is set")
		}
		mw = append(mw, s.auth(op.Roles...))
	}
	s.add(method, path, op, h, mw)
	s.ops = append(s.ops, Operation{Method: method, Path: path, Op: op})
}

// Operations lists the documented routes as "METHOD path" in Echo's path syntax.
func (s *Server) Operations() []string {
	out := make([]string, 0, len(s.ops))
	for _, o := range s.ops {
		out = append(out, o.Method+" "+o.Path)
	}
	return out
}

// Documented lists the routes registered through Route, in the order they were: routes
// are only ever added, so the list's length tells one set of routes from the next.
func (s *Server) Documented() []Operation { return slices.Clone(s.ops) }

// Version is the service's version, as the document states it.
func (s *Server) Version() string { return s.version }

// PathParam is the rule of one path parameter: a UUID, or an identifier that is a path
// segment of at most max UTF-16 code units. The rule is both what the document says and
// what every route with the parameter enforces (Route checks it before the handler runs).
type PathParam struct {
	UUID bool
	Max  int
}

// pathParamRules is the rule of every path parameter a route may use.
var pathParamRules = map[string]PathParam{
	"runId":          {UUID: true},
	"attemptId":      {UUID: true},
	"checkpointId":   {UUID: true},
	"callId":         {UUID: true},
	"decisionId":     {UUID: true},
	"delegationId":   {UUID: true},
	"operationId":    {UUID: true},
	"projectId":      {Max: 64},
	"releaseId":      {Max: 256},
	"adapterVersion": {Max: 32},
	"agentId":        {Max: 128},
	"taskId":         {Max: 64},
	"scheduleId":     {Max: 128},
	"webhookName":    {Max: 64},
	"deliveryId":     {UUID: true},
}

// PathParams lists the parameters of an Echo path (/v1/runs/:runId: runId).
func PathParams(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if strings.HasPrefix(s, ":") {
			out = append(out, s[1:])
		}
	}
	return out
}

// PathParamRule is the rule of the path parameter name, which the document states.
func PathParamRule(name string) (PathParam, bool) {
	p, ok := pathParamRules[name]
	return p, ok
}
